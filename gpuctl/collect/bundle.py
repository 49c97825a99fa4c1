"""``gpuctl snapshot save``: a bundle ``--snapshot`` reads back.

Whole objects as the API returned them (minus ``managedFields``), one ``v1 List``
file per kind, streamed page by page so 150,000 pods never sit in memory at once;
device-plugin and failing GPU pods' logs under ``logs/``; ``snapshot.json`` with
capturedAt, the context and what could not be collected.

Bundles get pasted into tickets, so by default they are redacted: env ``value``s
(except NVIDIA_*/CUDA_* that the CUDA checks read), the last-applied-configuration
annotation, ConfigMap data other than device-plugin configs, and tokens in logs.
Secrets are never collected.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import shutil
import tarfile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Optional

import msgspec

from .. import __version__
from ..errors import SourceError, UsageError
from ..model import objects as O
from ..model import snapshot as S

REDACTED = "REDACTED"
KEEP_ENV_PREFIXES = ("NVIDIA_", "CUDA_")
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
DEVICE_PLUGIN_CONFIG_HINTS = ("device-plugin", "time-slicing", "timeslicing", "mig-parted", "mps", "gpu-feature-discovery")
LOG_TAIL_LINES = 400
MAX_LOG_PODS = 50
MAX_METRICS_NODES = 32   # DCGM scrapes through the API server's proxy are not free on a 5,000-node cluster
_TOKEN_PATTERNS = [
    (re.compile(r"(?i)(bearer\s+)[A-Za-z0-9\-._~+/]+=*"), r"\1" + REDACTED),
    (re.compile(r"eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]+"), REDACTED),
    (re.compile(r"AKIA[0-9A-Z]{16}"), REDACTED),
    (re.compile(r"(?i)\b(password|passwd|secret|token|api[_-]?key|access[_-]?key)(\s*[=:]\s*|\"\s*:\s*\")([^\s\"',;]+)"),
     r"\1\2" + REDACTED),
]

# (file stem, API path template, kind, namespaced). Secrets are deliberately absent.
COLLECT: list[tuple[str, str, str, bool]] = [
    ("nodes", "/api/v1/nodes", "Node", False),
    ("pods", "/api/v1{ns}/pods", "Pod", True),
    ("events", "/api/v1{ns}/events", "Event", True),
    ("namespaces", "/api/v1/namespaces", "Namespace", False),
    ("resourcequotas", "/api/v1{ns}/resourcequotas", "ResourceQuota", True),
    ("limitranges", "/api/v1{ns}/limitranges", "LimitRange", True),
    ("configmaps", "/api/v1{ns}/configmaps", "ConfigMap", True),
    ("persistentvolumeclaims", "/api/v1{ns}/persistentvolumeclaims", "PersistentVolumeClaim", True),
    ("persistentvolumes", "/api/v1/persistentvolumes", "PersistentVolume", False),
    ("priorityclasses", "/apis/scheduling.k8s.io/v1/priorityclasses", "PriorityClass", False),
    ("runtimeclasses", "/apis/node.k8s.io/v1/runtimeclasses", "RuntimeClass", False),
    ("storageclasses", "/apis/storage.k8s.io/v1/storageclasses", "StorageClass", False),
    ("daemonsets", "/apis/apps/v1{ns}/daemonsets", "DaemonSet", True),
    ("deployments", "/apis/apps/v1{ns}/deployments", "Deployment", True),
    ("replicasets", "/apis/apps/v1{ns}/replicasets", "ReplicaSet", True),
    ("statefulsets", "/apis/apps/v1{ns}/statefulsets", "StatefulSet", True),
    ("jobs", "/apis/batch/v1{ns}/jobs", "Job", True),
    ("resourceclaims", "/apis/resource.k8s.io/v1{ns}/resourceclaims", "ResourceClaim", True),
    ("resourceclaimtemplates", "/apis/resource.k8s.io/v1{ns}/resourceclaimtemplates", "ResourceClaimTemplate", True),
    ("deviceclasses", "/apis/resource.k8s.io/v1/deviceclasses", "DeviceClass", False),
    ("resourceslices", "/apis/resource.k8s.io/v1/resourceslices", "ResourceSlice", False),
    ("kueue-workloads", "/apis/kueue.x-k8s.io/v1beta1{ns}/workloads", "Workload", True),
    ("kueue-localqueues", "/apis/kueue.x-k8s.io/v1beta1{ns}/localqueues", "LocalQueue", True),
    ("kueue-clusterqueues", "/apis/kueue.x-k8s.io/v1beta1/clusterqueues", "ClusterQueue", False),
    ("kueue-resourceflavors", "/apis/kueue.x-k8s.io/v1beta1/resourceflavors", "ResourceFlavor", False),
    ("volcano-podgroups", "/apis/scheduling.volcano.sh/v1beta1{ns}/podgroups", "PodGroup", True),
    ("volcano-queues", "/apis/scheduling.volcano.sh/v1beta1/queues", "Queue", False),
    ("volcano-jobs", "/apis/batch.volcano.sh/v1alpha1{ns}/jobs", "Job", True),
    ("pytorchjobs", "/apis/kubeflow.org/v1{ns}/pytorchjobs", "PyTorchJob", True),
    ("mpijobs", "/apis/kubeflow.org/v2beta1{ns}/mpijobs", "MPIJob", True),
    ("jobsets", "/apis/jobset.x-k8s.io/v1alpha2{ns}/jobsets", "JobSet", True),
    ("karpenter-nodeclaims", "/apis/karpenter.sh/v1/nodeclaims", "NodeClaim", False),
    ("karpenter-nodepools", "/apis/karpenter.sh/v1/nodepools", "NodePool", False),
]

# The data sets (Snapshot gap keys) each list feeds. A list that could not be read,
# or was read in one namespace only, is written to snapshot.json's "gaps", and
# --snapshot restores the same gap a live run would have had: checks are skipped
# with the reason instead of reading a partial bundle as a cluster with no pods.
FEEDS: dict[str, tuple[str, ...]] = {
    "nodes": (S.NODES,), "pods": (S.PODS, S.DEVICE_PLUGINS), "events": (S.EVENTS,),
    "resourcequotas": (S.QUOTAS,), "persistentvolumeclaims": (S.PVCS,), "runtimeclasses": (S.RUNTIMECLASSES,),
    "kueue-workloads": (S.QUEUES,), "volcano-podgroups": (S.QUEUES,),
    "resourceclaims": (S.DRA,), "resourceslices": (S.DRA,), "deviceclasses": (S.DRA,),
}
# data sets that span namespaces: incomplete when only one namespace was collected
CROSS_NAMESPACE = (S.PODS, S.DEVICE_PLUGINS)


def _resource_of(template: str) -> tuple[str, str]:
    """(API group, resource) of a COLLECT path template."""
    parts = template.replace("{ns}", "").strip("/").split("/")
    return ("" if parts[0] == "api" else parts[1]), parts[-1]


# ------------------------------------------------------------------ redaction


def _redact_env(containers: Any) -> None:
    for c in containers or []:
        if not isinstance(c, dict):
            continue
        for e in c.get("env") or []:
            if isinstance(e, dict) and "value" in e and not str(e.get("name", "")).startswith(KEEP_ENV_PREFIXES):
                e["value"] = REDACTED


def _redact_pod_spec(spec: Any) -> None:
    if isinstance(spec, dict):
        for key in ("containers", "initContainers", "ephemeralContainers"):
            _redact_env(spec.get(key))


def _walk_templates(obj: Any) -> Iterator[dict]:
    """Every pod spec inside a workload (spec.template.spec, jobTemplate, replicaSpecs, …)."""
    if isinstance(obj, dict):
        if isinstance(obj.get("containers"), list):
            yield obj
        for v in obj.values():
            yield from _walk_templates(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _walk_templates(v)


def redact_object(obj: dict[str, Any]) -> dict[str, Any]:
    md = obj.get("metadata")
    if isinstance(md, dict):
        ann = md.get("annotations")
        if isinstance(ann, dict) and LAST_APPLIED in ann:
            ann[LAST_APPLIED] = REDACTED
    kind = obj.get("kind")
    if kind == "ConfigMap" and not is_device_plugin_config(obj):
        for key in ("data", "binaryData"):
            if isinstance(obj.get(key), dict):
                obj[key] = {k: REDACTED for k in obj[key]}
    for spec in _walk_templates(obj.get("spec")):
        _redact_pod_spec(spec)
    return obj


def is_device_plugin_config(cm: dict[str, Any]) -> bool:
    md = cm.get("metadata") or {}
    name = str(md.get("name", "")).lower()
    labels = md.get("labels") or {}
    return any(h in name for h in DEVICE_PLUGIN_CONFIG_HINTS) or "nvidia-device-plugin" in str(labels.get("app.kubernetes.io/name", ""))


def redact_log(text: str) -> str:
    for rx, repl in _TOKEN_PATTERNS:
        text = rx.sub(repl, text)
    return text


def strip_managed(obj: dict[str, Any]) -> dict[str, Any]:
    md = obj.get("metadata")
    if isinstance(md, dict):
        md.pop("managedFields", None)
    return obj


# ------------------------------------------------------------------ writing


@dataclass
class SaveReport:
    path: str
    counts: dict[str, int] = field(default_factory=dict)
    gaps: list[str] = field(default_factory=list)        # one line each, for people
    logs: int = 0
    data_gaps: dict[str, S.Gap] = field(default_factory=dict)   # gap key -> Gap, for --snapshot
    log_gaps: dict[str, S.Gap] = field(default_factory=dict)    # ns/pod/container -> Gap
    namespaces: Optional[list[str]] = None                      # collected namespaces (None: all)


class _ListWriter:
    def __init__(self, path: Path):
        self.f = open(path, "w", encoding="utf-8")
        self.f.write('{"apiVersion": "v1", "kind": "List", "items": [\n')
        self.n = 0

    def add(self, obj: dict[str, Any]) -> None:
        if self.n:
            self.f.write(",\n")
        self.f.write(json.dumps(obj, ensure_ascii=False))
        self.n += 1

    def close(self) -> None:
        self.f.write("\n]}\n")
        self.f.close()


def _prepare_dest(dest: str, force: bool) -> tuple[Path, bool]:
    p = Path(dest)
    tarball = p.name.endswith((".tar.gz", ".tgz"))
    if p.exists() and not force:
        raise UsageError(f"{dest} already exists", "choose another name or pass --force to replace it")
    return p, tarball


def _finish(work: Path, dest: Path, tarball: bool, force: bool) -> None:
    if tarball:
        tmp = dest.with_name(dest.name + ".partial")
        with tarfile.open(tmp, "w:gz") as tf:
            top = dest.name[: -len(".tar.gz")] if dest.name.endswith(".tar.gz") else dest.stem
            for f in sorted(work.rglob("*")):
                if f.is_file():
                    tf.add(f, arcname=f"{top}/{f.relative_to(work).as_posix()}")
        if force and dest.exists():
            dest.unlink() if dest.is_file() else shutil.rmtree(dest)
        os.replace(tmp, dest)
    else:
        if force and dest.exists():
            shutil.rmtree(dest) if dest.is_dir() else dest.unlink()
        shutil.move(str(work), str(dest))


def _write_meta(work: Path, context: Optional[str], captured: dt.datetime, redact: bool, report: SaveReport) -> None:
    meta = {"schema": "gpuctl/snapshot/v1", "capturedAt": captured.strftime("%Y-%m-%dT%H:%M:%SZ"), "context": context,
            "gpuctlVersion": __version__, "redacted": redact, "counts": report.counts, "notCollected": report.gaps}
    if report.namespaces is not None:
        meta["namespaces"] = report.namespaces
    if report.data_gaps:
        meta["gaps"] = {k: _gap_json(g) for k, g in sorted(report.data_gaps.items())}
    if report.log_gaps:
        meta["logGaps"] = {k: _gap_json(g) for k, g in sorted(report.log_gaps.items())}
    (work / "snapshot.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")


def _gap_json(g: S.Gap) -> dict[str, Any]:
    d = {"what": g.what, "reason": g.reason, "detail": g.detail, "verb": g.verb, "resource": g.resource,
         "namespace": g.namespace, "group": g.group}
    return {k: v for k, v in d.items() if v not in (None, "")}


def _write_log(work: Path, ns: str, pod: str, container: str, previous: bool, text: str, redact: bool) -> None:
    d = work / "logs" / ns / pod
    d.mkdir(parents=True, exist_ok=True)
    (d / f"{container}{'.previous' if previous else ''}.log").write_text(redact_log(text) if redact else text, encoding="utf-8")


def save_live(api: Any, dest: str, namespace: Optional[str], redact: bool = True, force: bool = False) -> SaveReport:
    from .kube import ApiFailure, gap_from

    p, tarball = _prepare_dest(dest, force)
    work = Path(tempfile.mkdtemp(prefix="gpuctl-snapshot-", dir=str(p.parent.resolve()) if p.parent.exists() else None))
    report = SaveReport(dest)
    from .live import now

    captured = now()
    log_candidates: list[dict[str, Any]] = []
    exporters: dict[str, dict[str, Any]] = {}     # node -> DCGM exporter pod
    metrics_nodes: list[str] = []                  # nodes whose GPU health matters
    try:
        fallback_ns = getattr(api, "default_namespace", None) or "default"
        report.namespaces = [namespace] if namespace else None

        def keep(item: dict[str, Any], kind: str, writer: _ListWriter) -> None:
            item.setdefault("kind", kind)
            obj = strip_managed(item)
            if redact:
                redact_object(obj)
            writer.add(obj)
            if kind == "Pod" and _wants_log(obj):
                log_candidates.append(obj)
                node = (obj.get("spec") or {}).get("nodeName")
                if node and not _is_device_plugin(obj):
                    metrics_nodes.append(node)
            if kind == "Pod" and _is_dcgm_exporter(obj):
                exporters[(obj.get("spec") or {}).get("nodeName", "")] = obj
            if kind == "Node" and _has_unhealthy_gpus(obj):
                metrics_nodes.append(obj.get("metadata", {}).get("name", ""))

        for stem, template, kind, namespaced in COLLECT:
            group, resource = _resource_of(template)
            scope = namespace if namespaced else None
            path = template.format(ns=f"/namespaces/{scope}" if scope else "")
            writer = _ListWriter(work / f"{stem}.json")
            try:
                try:
                    for item in _raw_items(api, path):
                        keep(item, kind, writer)
                except ApiFailure as e:
                    # A namespace-scoped role (a typical ML user): the cluster-wide list is
                    # forbidden, the user's own namespace is not. Collect that, and say so.
                    if not (e.reason == "forbidden" and namespaced and scope is None and writer.n == 0):
                        raise
                    if stem == "pods":   # the bundle's pods (where targets are looked up) are one namespace's
                        report.namespaces = [fallback_ns]
                        for key in CROSS_NAMESPACE:
                            report.data_gaps.setdefault(key, gap_from(e, "list pods (cluster-wide)", "list", "pods"))
                    scope = fallback_ns
                    for item in _raw_items(api, template.format(ns=f"/namespaces/{fallback_ns}")):
                        keep(item, kind, writer)
                    report.gaps.append(f"{stem}: forbidden cluster-wide ({e.message}); collected namespace "
                                       f"{fallback_ns} only")
            except ApiFailure as e:
                if e.reason != "not-found":
                    report.gaps.append(f"{stem}: {e.reason} ({e.message})")
                    where = f"in namespace {scope}" if scope else "cluster-wide"
                    for key in FEEDS.get(stem, ()):
                        report.data_gaps.setdefault(key, gap_from(e, f"list {stem} ({where})", "list", resource,
                                                                  namespace=scope if scope else None, group=group))
            finally:
                writer.close()
            if namespace and stem == "pods":
                for key in CROSS_NAMESPACE:
                    report.data_gaps.setdefault(key, S.Gap(
                        "pods of other namespaces", "absent",
                        f"the snapshot was saved with -n {namespace}: pods of other namespaces on the same nodes "
                        f"(and device-plugin pods) were not collected"))
            if writer.n == 0:
                (work / f"{stem}.json").unlink()
            else:
                report.counts[kind if stem == kind.lower() + "s" else stem] = writer.n
        for obj in log_candidates[:MAX_LOG_PODS]:
            md, spec, status = obj.get("metadata", {}), obj.get("spec", {}), obj.get("status", {})
            restarted = {cs.get("name") for cs in status.get("containerStatuses") or [] if cs.get("restartCount", 0) > 0}
            for c in spec.get("containers") or []:
                for previous in (False, True):
                    if previous and c.get("name") not in restarted:
                        continue
                    try:
                        text = api.log_text(md.get("namespace", ""), md.get("name", ""), c.get("name", ""), previous,
                                            tail_lines=LOG_TAIL_LINES)
                    except ApiFailure as e:
                        if not previous:
                            key = f"{md.get('namespace')}/{md.get('name')}/{c.get('name')}"
                            report.gaps.append(f"logs {key}: {e.reason}")
                            if e.reason != "not-found":
                                report.log_gaps[key] = gap_from(e, f"read log of {md.get('name')}/{c.get('name')}",
                                                                "get", "pods/log", namespace=md.get("namespace"))
                        continue
                    _write_log(work, md.get("namespace", ""), md.get("name", ""), c.get("name", ""), previous, text, redact)
                    report.logs += 1
        _save_metrics(api, work, list(dict.fromkeys(n for n in metrics_nodes if n in exporters))[:MAX_METRICS_NODES],
                      exporters, report)
        if not report.counts:
            raise SourceError("nothing could be collected from the cluster: " + "; ".join(report.gaps[:3]))
        _write_meta(work, api.context_name, captured, redact, report)
        _finish(work, p, tarball, force)
    finally:
        if work.exists():
            shutil.rmtree(work, ignore_errors=True)
    return report


def _raw_items(api: Any, path: str) -> Iterator[dict[str, Any]]:
    from .kube import PAGE_SIZE

    token = ""
    while True:
        q: dict[str, Any] = {"limit": PAGE_SIZE}
        if token:
            q["continue"] = token
        data = api.get_bytes(path, q)
        try:
            page = O.decode_lenient(msgspec.json, data)
        except msgspec.DecodeError as e:
            from .kube import ApiFailure

            raise ApiFailure(200, "error", f"invalid JSON from {path}: {e}") from None
        list_kind = str(page.get("kind", ""))
        api_version = page.get("apiVersion")
        for item in page.get("items") or []:
            if isinstance(item, dict):
                if list_kind.endswith("List") and list_kind != "List":
                    item.setdefault("kind", list_kind[:-4])
                if api_version:
                    item.setdefault("apiVersion", api_version)
                yield item
        token = (page.get("metadata") or {}).get("continue") or ""
        if not token:
            return


def _is_dcgm_exporter(pod: dict[str, Any]) -> bool:
    labels = (pod.get("metadata") or {}).get("labels") or {}
    return labels.get("app") == "nvidia-dcgm-exporter" or labels.get("app.kubernetes.io/name") == "dcgm-exporter"


def _is_device_plugin(pod: dict[str, Any]) -> bool:
    from ..checks.device_plugin import labels_mark_device_plugin

    md = pod.get("metadata") or {}
    return labels_mark_device_plugin(md.get("labels") or {}, md.get("namespace"))


def _has_unhealthy_gpus(node: dict[str, Any]) -> bool:
    from ..knowledge import catalog
    from ..model.quantity import parse_quantity

    status = node.get("status") or {}
    cap, alloc = status.get("capacity") or {}, status.get("allocatable") or {}
    try:
        return any(catalog.is_gpu_resource(r) and parse_quantity(v) > parse_quantity(alloc.get(r, 0)) for r, v in cap.items())
    except ValueError:
        return False


def _save_metrics(api: Any, work: Path, nodes: list[str], exporters: dict[str, dict[str, Any]], report: SaveReport) -> None:
    """metrics/<node>.prom from each node's DCGM exporter, through the pod proxy."""
    from .kube import ApiFailure, gap_from
    from .metrics import MetricsUnavailable, dcgm_via_proxy

    for node in nodes:
        pod = O.convert("Pod", exporters[node])
        try:
            text = dcgm_via_proxy(api, node, [pod], timeout=api.timeout)
        except ApiFailure as e:
            report.gaps.append(f"metrics {node}: {e.reason}")
            report.data_gaps.setdefault(S.METRICS, gap_from(e, f"read DCGM metrics of {node} through the pod proxy",
                                                            "get", "pods/proxy", namespace=pod.metadata.namespace))
            continue
        except MetricsUnavailable as e:
            report.gaps.append(f"metrics {node}: {e.reason}")
            report.data_gaps.setdefault(S.METRICS, S.Gap(f"read DCGM metrics of {node}", e.reason, e.detail))
            continue
        (work / "metrics").mkdir(exist_ok=True)
        (work / "metrics" / f"{node}.prom").write_text(text, encoding="utf-8")
        report.counts["metrics"] = report.counts.get("metrics", 0) + 1


def _wants_log(pod: dict[str, Any]) -> bool:
    if _is_device_plugin(pod):
        return True
    status = pod.get("status") or {}
    if status.get("phase") == "Failed" and status.get("reason") in ("UnexpectedAdmissionError", "TopologyAffinityError"):
        return True
    for cs in status.get("containerStatuses") or []:
        if cs.get("restartCount", 0) > 0 or (cs.get("state") or {}).get("waiting"):
            limits = {}
            for c in (pod.get("spec") or {}).get("containers") or []:
                limits.update(((c.get("resources") or {}).get("limits") or {}))
            return any("gpu" in k or k.startswith("nvidia.com/") for k in limits)
    return False


def save_offline(source: str, dest: str, redact: bool = True, force: bool = False) -> SaveReport:
    """Re-bundle (and redact) an existing snapshot or kubectl dump."""
    from .files import iter_raw_objects, load_snapshot, raw_logs

    p, tarball = _prepare_dest(dest, force)
    snap = load_snapshot(source)  # validates it, and gives capturedAt/context
    work = Path(tempfile.mkdtemp(prefix="gpuctl-snapshot-"))
    report = SaveReport(dest)
    try:
        writers: dict[str, _ListWriter] = {}
        for obj in iter_raw_objects(source):
            kind = str(obj.get("kind", "object"))
            if kind == "Secret":
                continue
            w = writers.get(kind)
            if w is None:
                w = writers[kind] = _ListWriter(work / f"{kind.lower()}s.json")
            strip_managed(obj)
            w.add(redact_object(obj) if redact else obj)
            report.counts[kind] = report.counts.get(kind, 0) + 1
        for w in writers.values():
            w.close()
        for (ns, pod, container, previous), text in raw_logs(source).items():
            _write_log(work, ns, pod, container, previous, text, redact)
            report.logs += 1
        for folder, items in (("metrics", snap.metrics), ("probes", snap.probes)):
            for node, content in items.items():
                (work / folder).mkdir(exist_ok=True)
                suffix = ".prom" if folder == "metrics" else ".json"
                text = content if isinstance(content, str) else json.dumps(content, indent=2)
                (work / folder / f"{node}{suffix}").write_text(text, encoding="utf-8")
        # what the source bundle could not collect stays recorded (the synthesised
        # "no Node objects" gap is re-derived on load, so it is not copied)
        report.data_gaps = {k: g for k, g in snap.gaps.items() if g.reason != "absent" or k != S.NODES}
        report.log_gaps = dict(snap.log_gaps)
        report.namespaces = snap.namespaces
        _write_meta(work, snap.context, snap.now(), redact, report)
        _finish(work, p, tarball, force)
    finally:
        if work.exists():
            shutil.rmtree(work, ignore_errors=True)
    return report


def describe(report: SaveReport) -> Iterable[str]:
    yield f"wrote {report.path}: " + ", ".join(f"{n} {k}" for k, n in sorted(report.counts.items())) + f", {report.logs} logs"
    for g in report.gaps:
        yield f"not collected: {g}"
