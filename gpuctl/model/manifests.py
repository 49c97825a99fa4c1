"""Manifests not yet applied (``gpuctl fit -f FILE``): parse YAML/JSON text into
documents, and turn each supported workload into its pod templates and how many
replicas of each must run at the same time (docs/fit.md).

Pure: no I/O beyond the text given, no cluster. Every bad input is one
:class:`~gpuctl.errors.UsageError` line naming the source and the document."""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from typing import Any, Optional

from ..errors import UsageError

# kind -> what the pods of it look like (the apiVersion group decides Volcano's Job)
SUPPORTED_KINDS = ("Pod", "Job", "Deployment", "StatefulSet", "ReplicaSet", "PyTorchJob", "MPIJob", "JobSet",
                   "Job.batch.volcano.sh")
MAX_MANIFEST_BYTES = 8 * 1024 * 1024
MAX_REPLICAS = 10_000
MAX_YAML_NODES = 200_000
KUEUE_QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
VOLCANO_QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"
EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


@dataclass
class PodTemplate:
    """One pod template of a manifest: the pod (a Pod object as a dict, ready for
    the model's decoder), the workload it came from, and how many replicas of it
    must be placed together."""

    workload: str                 # "job/train", "pytorchjob/bert", "pod/x", "--gpus 8"
    kind: str                     # the manifest's kind ("Job", "Job.batch.volcano.sh", …)
    name: str                     # the workload's name
    namespace: str
    role: Optional[str]           # "Worker", "Master", a vcjob task or JobSet replicatedJob; None for one template
    replicas: int
    pod: dict[str, Any]
    queue: Optional[str] = None           # Kueue LocalQueue (label kueue.x-k8s.io/queue-name)
    volcano_queue: Optional[str] = None   # Volcano queue (vcjob spec.queue / annotation)
    min_available: Optional[int] = None   # Volcano minAvailable of the whole job
    source: str = ""
    extras: dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return self.workload + (f" ({self.role})" if self.role else "")


# ------------------------------------------------------------------ parsing


def _refuse_alias_bomb(text: str, source: str) -> None:
    import yaml

    from .yaml_aliases import expands_beyond

    if expands_beyond(yaml.compose_all(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)), MAX_YAML_NODES):
        raise UsageError(f"{source}: its YAML aliases expand to more than {MAX_YAML_NODES:,} nodes; refusing")


def parse_manifest_text(text: str, source: str) -> list[dict]:
    """The documents of a manifest (YAML, multi-document YAML, JSON, or a ``List``
    of items), each a dict with a supported ``kind``. Raises UsageError (one line,
    naming ``source``) on text that is not YAML/JSON, a document that is not an
    object, or a kind ``gpuctl fit`` does not take."""
    import yaml

    if len(text) > MAX_MANIFEST_BYTES:
        raise UsageError(f"{source}: larger than {MAX_MANIFEST_BYTES // (1024 * 1024)} MiB; refusing")
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        if "&" in text:
            _refuse_alias_bomb(text, source)
        raw = [d for d in yaml.load_all(text, Loader=loader) if d is not None]
    except yaml.YAMLError as e:
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        mark = getattr(e, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise UsageError(f"{source}: not valid YAML or JSON{where}: {first}") from None
    except RecursionError:
        raise UsageError(f"{source}: nested deeper than the parser's limit; refusing") from None
    docs: list[dict] = []
    for i, d in enumerate(raw, 1):
        if not isinstance(d, dict):
            raise UsageError(f"{source}: document {i} is not a Kubernetes object (a mapping with kind)")
        if d.get("kind") == "List" or (isinstance(d.get("kind"), str) and d["kind"].endswith("List") and "items" in d):
            items = d.get("items")
            if not isinstance(items, list):
                raise UsageError(f"{source}: document {i} is a List without items")
            for j, item in enumerate(items, 1):
                if not isinstance(item, dict):
                    raise UsageError(f"{source}: document {i} item {j} is not a Kubernetes object")
                docs.append(item)
        else:
            docs.append(d)
    if not docs:
        raise UsageError(f"{source}: no Kubernetes object in it")
    for i, d in enumerate(docs, 1):
        kind_of(d, f"{source}: document {i}")
    return docs


def kind_of(doc: dict, where: str = "manifest") -> str:
    """The supported kind of a document (``Job.batch.volcano.sh`` for a Volcano
    Job), or UsageError naming what is supported."""
    kind = doc.get("kind")
    name = (doc.get("metadata") or {}).get("name") if isinstance(doc.get("metadata"), dict) else None
    what = f"{where} ({kind}/{name})" if isinstance(kind, str) and name else where
    if not isinstance(kind, str) or not kind:
        raise UsageError(f"{where}: has no kind")
    api = doc.get("apiVersion") if isinstance(doc.get("apiVersion"), str) else ""
    if kind == "Job" and api.startswith("batch.volcano.sh/"):
        return "Job.batch.volcano.sh"
    if kind not in SUPPORTED_KINDS:
        raise UsageError(f"{what}: kind {kind} is not supported; gpuctl fit takes "
                         + ", ".join(k for k in SUPPORTED_KINDS if "." not in k) + " and Volcano Job (batch.volcano.sh)")
    return kind


# ------------------------------------------------------------------ pod templates


def _dict(value: Any, what: str) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise UsageError(f"{what} is not a mapping")
    return value


def _count(value: Any, default: int, what: str) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise UsageError(f"{what} must be a whole number of 0 or more, not {value!r}")
    if value > MAX_REPLICAS:
        raise UsageError(f"{what} is {value}; gpuctl fit places at most {MAX_REPLICAS:,} replicas")
    return value


def _pod_from_template(tmpl: Any, what: str, namespace: str, labels: dict[str, str],
                       annotations: Optional[dict[str, str]] = None) -> dict:
    tmpl = _dict(tmpl, what)
    spec = tmpl.get("spec")
    if not isinstance(spec, dict) or not isinstance(spec.get("containers"), list) or not spec["containers"]:
        raise UsageError(f"{what}: no pod template with containers")
    meta = _dict(tmpl.get("metadata"), f"{what}.metadata")
    out_meta: dict[str, Any] = {
        "namespace": namespace,
        "labels": {**{str(k): str(v) for k, v in _dict(meta.get("labels"), f"{what}.metadata.labels").items()}, **labels},
        "annotations": {**{str(k): str(v) for k, v in _dict(meta.get("annotations"), f"{what}.metadata.annotations").items()},
                        **(annotations or {})},
    }
    return {"apiVersion": "v1", "kind": "Pod", "metadata": out_meta, "spec": copy.deepcopy(spec)}


def pod_templates(doc: dict, default_namespace: str = "default", source: str = "manifest") -> list[PodTemplate]:
    """The pod templates of one document and the replicas of each that must run
    together: a Pod (1); a Job (parallelism); a Deployment, StatefulSet or
    ReplicaSet (replicas); a PyTorchJob or MPIJob (each replica spec's replicas); a
    JobSet (each replicatedJob's replicas × its Job's parallelism); a Volcano Job
    (each task's replicas, with the job's minAvailable)."""
    kind = kind_of(doc, source)
    meta = _dict(doc.get("metadata"), f"{source}: metadata")
    name = meta.get("name") or meta.get("generateName") or "unnamed"
    if not isinstance(name, str):
        raise UsageError(f"{source}: metadata.name is not a string")
    name = name.rstrip("-") or "unnamed"
    ns = meta.get("namespace") or default_namespace
    if not isinstance(ns, str):
        raise UsageError(f"{source}: metadata.namespace is not a string")
    from .names import name_problem

    for what, value in (("namespace", ns), ("object", name)):
        problem = name_problem(what, value)
        if problem:
            raise UsageError(f"{source}: {problem}")
    spec = _dict(doc.get("spec"), f"{source}: {kind}/{name} spec")
    wl_labels = {str(k): str(v) for k, v in _dict(meta.get("labels"), f"{source}: metadata.labels").items()}
    queue = wl_labels.get(KUEUE_QUEUE_LABEL)
    short = kind.split(".")[0].lower() if kind != "Job.batch.volcano.sh" else "vcjob"
    ref = f"{short}/{name}"
    where = f"{source}: {ref}"
    out: list[PodTemplate] = []

    def add(role: Optional[str], replicas: int, tmpl: Any, labels: dict[str, str], path: str,
            annotations: Optional[dict[str, str]] = None, **kw: Any) -> None:
        pod = _pod_from_template(tmpl, f"{where} {path}", ns, labels, annotations)
        q = pod["metadata"]["labels"].get(KUEUE_QUEUE_LABEL) or queue
        out.append(PodTemplate(ref, kind, name, ns, role, replicas, pod, queue=q, source=source, **kw))

    if kind == "Pod":
        pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"namespace": ns, "labels": wl_labels,
                            "annotations": {str(k): str(v) for k, v in _dict(meta.get("annotations"), f"{where} annotations").items()}},
               "spec": copy.deepcopy(spec)}
        if not isinstance(spec.get("containers"), list) or not spec["containers"]:
            raise UsageError(f"{where}: no containers")
        out.append(PodTemplate(ref, kind, name, ns, None, 1, pod, queue=queue, source=source))
    elif kind == "Job":
        n = _count(spec.get("parallelism"), 1, f"{where} spec.parallelism")
        if spec.get("completions") is not None:   # never more pods at once than completions
            n = min(n, _count(spec.get("completions"), 1, f"{where} spec.completions"))
        add(None, n, spec.get("template"),
            {"batch.kubernetes.io/job-name": name, "job-name": name}, "spec.template")
    elif kind in ("Deployment", "StatefulSet", "ReplicaSet"):
        add(None, _count(spec.get("replicas"), 1, f"{where} spec.replicas"), spec.get("template"), {}, "spec.template")
    elif kind in ("PyTorchJob", "MPIJob"):
        key = "pytorchReplicaSpecs" if kind == "PyTorchJob" else "mpiReplicaSpecs"
        specs = _dict(spec.get(key), f"{where} spec.{key}")
        if not specs:
            raise UsageError(f"{where}: spec.{key} is empty")
        policy = _dict(_dict(spec.get("runPolicy"), f"{where} spec.runPolicy").get("schedulingPolicy"),
                       f"{where} spec.runPolicy.schedulingPolicy")
        min_av = _count(policy.get("minAvailable"), 0, f"{where} spec.runPolicy.schedulingPolicy.minAvailable") \
            if policy.get("minAvailable") is not None else None     # gang scheduling: this many must start together
        for role, rs in specs.items():
            rs = _dict(rs, f"{where} spec.{key}.{role}")
            add(str(role), _count(rs.get("replicas"), 1, f"{where} spec.{key}.{role}.replicas"), rs.get("template"),
                {"training.kubeflow.org/job-name": name, "training.kubeflow.org/replica-type": str(role).lower()},
                f"spec.{key}.{role}.template", min_available=min_av)
    elif kind == "JobSet":
        jobs = spec.get("replicatedJobs")
        if not isinstance(jobs, list) or not jobs:
            raise UsageError(f"{where}: spec.replicatedJobs is empty")
        for i, rj in enumerate(jobs):
            rj = _dict(rj, f"{where} spec.replicatedJobs[{i}]")
            role = str(rj.get("name") or i)
            job_spec = _dict(_dict(rj.get("template"), f"{where} spec.replicatedJobs[{i}].template").get("spec"),
                             f"{where} spec.replicatedJobs[{i}].template.spec")
            n = _count(rj.get("replicas"), 1, f"{where} spec.replicatedJobs[{i}].replicas") * \
                _count(job_spec.get("parallelism"), 1, f"{where} spec.replicatedJobs[{i}].template.spec.parallelism")
            add(role, n, job_spec.get("template"),
                {"jobset.sigs.k8s.io/jobset-name": name, "jobset.sigs.k8s.io/replicatedjob-name": role},
                f"spec.replicatedJobs[{i}].template.spec.template")
    else:   # Volcano Job
        tasks = spec.get("tasks")
        if not isinstance(tasks, list) or not tasks:
            raise UsageError(f"{where}: spec.tasks is empty")
        vq = spec.get("queue") or (meta.get("annotations") or {}).get(VOLCANO_QUEUE_ANNOTATION) or "default"
        total = 0
        for i, t in enumerate(tasks):
            t = _dict(t, f"{where} spec.tasks[{i}]")
            total += _count(t.get("replicas"), 1, f"{where} spec.tasks[{i}].replicas")
        min_av = _count(spec.get("minAvailable"), total, f"{where} spec.minAvailable")
        for i, t in enumerate(tasks):
            role = str(t.get("name") or i)
            tmpl = _dict(t.get("template"), f"{where} spec.tasks[{i}].template")
            tspec = tmpl.get("spec") if isinstance(tmpl.get("spec"), dict) else None
            if tspec is not None and spec.get("schedulerName") and not tspec.get("schedulerName"):
                tmpl = {**tmpl, "spec": {**tspec, "schedulerName": spec["schedulerName"]}}
            add(role, _count(t.get("replicas"), 1, f"{where} spec.tasks[{i}].replicas"), tmpl,
                {"volcano.sh/job-name": name, "volcano.sh/task-spec": role}, f"spec.tasks[{i}].template",
                annotations={VOLCANO_QUEUE_ANNOTATION: str(vq)}, volcano_queue=str(vq), min_available=min_av)
    return out


# ------------------------------------------------------------------ the quick form


_LABEL_KEY = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")


def parse_selector(text: str) -> tuple[str, str]:
    """``--selector k=v``: one nodeSelector entry."""
    key, sep, value = text.partition("=")
    if not sep or not key or not _LABEL_KEY.match(key) or len(key) > 317 or len(value) > 63 or \
            (value and not re.fullmatch(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?", value)):
        raise UsageError(f"--selector {text!r}: give KEY=VALUE (a node label, as nodeSelector takes it)")
    return key, value


def parse_toleration(text: str) -> dict[str, str]:
    """``--toleration KEY[=VALUE]:EFFECT`` (EFFECT: NoSchedule, PreferNoSchedule or
    NoExecute; ``KEY`` alone tolerates every effect): a pod toleration."""
    head, sep, effect = text.rpartition(":")
    if not sep:
        head, effect = text, ""
    key, eq, value = head.partition("=")
    if not key or not _LABEL_KEY.match(key) or (effect and effect not in EFFECTS):
        raise UsageError(f"--toleration {text!r}: give KEY[=VALUE]:EFFECT, EFFECT one of {', '.join(EFFECTS)}")
    tol: dict[str, str] = {"key": key, "operator": "Equal" if eq else "Exists"}
    if eq:
        tol["value"] = value
    if effect:
        tol["effect"] = effect
    return tol


def quick_template(gpus: int, resource: str = "nvidia.com/gpu", selectors: Any = (), tolerations: Any = (),
                   replicas: int = 1, namespace: str = "default") -> PodTemplate:
    """``gpuctl fit --gpus N``: a pod of one container asking for N of ``resource``."""
    if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1 or gpus > 4096:
        raise UsageError(f"--gpus {gpus!r}: give a whole number from 1 to 4096")
    if not isinstance(resource, str) or not re.fullmatch(r"[A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?", resource):
        raise UsageError(f"--resource {resource!r}: give an extended resource name such as nvidia.com/gpu")
    replicas = _count(replicas, 1, "--replicas")
    if replicas < 1:
        raise UsageError("--replicas must be 1 or more")
    node_selector = dict(parse_selector(s) for s in selectors)
    tols = [parse_toleration(t) for t in tolerations]
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"namespace": namespace, "labels": {}, "annotations": {}},
           "spec": {"containers": [{"name": "fit", "resources": {"requests": {resource: gpus}, "limits": {resource: gpus}}}],
                    "nodeSelector": node_selector, "tolerations": tols}}
    what = f"--gpus {gpus}" + (f" ({resource})" if resource != "nvidia.com/gpu" else "")
    return PodTemplate(what, "Pod", f"fit-{gpus}gpu", namespace, None, replicas, pod, source="command line")


def read_manifest(path: str, stdin: Any = None) -> tuple[str, str]:
    """(text, source) of a manifest as ``gpuctl fit -f PATH`` reads it: at most 8 MiB of
    UTF-8 from the file, or from ``stdin`` (a binary stream) for ``-``. Anything else is
    a usage error naming the source."""
    if path == "-":
        data = stdin.read(MAX_MANIFEST_BYTES + 1) if stdin is not None else b""
        source = "stdin"
    else:
        try:
            with open(path, "rb") as f:
                data = f.read(MAX_MANIFEST_BYTES + 1)
        except IsADirectoryError:
            raise UsageError(f"-f {path}: is a directory; give a manifest file") from None
        except OSError as e:
            raise UsageError(f"-f {path}: cannot be read ({e.strerror or e})") from None
        source = path
    if len(data) > MAX_MANIFEST_BYTES:
        raise UsageError(f"{source}: larger than {MAX_MANIFEST_BYTES // (1024 * 1024)} MiB; refusing")
    try:
        return data.decode("utf-8"), source
    except UnicodeDecodeError:
        raise UsageError(f"{source}: not UTF-8 text") from None
