"""``gpuctl fit``: the ``gpuctl/fit/v1`` document (docs/fit.md, docs/output.md).

Library entry point (``gpuctl mcp`` calls it; keep the signature stable):

    fit_report(snap, manifests=None, *, namespace="default", gpus=None,
               resource="nvidia.com/gpu", selectors=(), tolerations=(), replicas=1,
               assume=()) -> (document, exit code)
"""

from __future__ import annotations

from typing import Any, Iterable, Optional

from ..engine.fit import Assumption, Placer, apply_assumptions, overlay_of, parse_assumptions, pod_record
from ..engine.fit_admission import QuotaRoom, QueueVerdict, kueue_admission, volcano_admission
from ..errors import UsageError
from ..findings import CheckResult, Finding, Status
from ..model.manifests import PodTemplate, parse_manifest_text, pod_templates, quick_template
from ..model.requests import pod_requests
from ..model.snapshot import Snapshot

SCHEMA = "gpuctl/fit/v1"


def fit_report(snap: Snapshot, manifests: list[dict] | None = None, *, namespace: str = "default",
               gpus: int | None = None, resource: str = "nvidia.com/gpu", selectors: list[str] = (),
               tolerations: list[str] = (), replicas: int = 1, assume: list[str] = ()) -> tuple[dict, int]:
    """Would these pods fit now? Returns ``(document, exit code)``.

    - ``snap``: the cluster (``gpuctl.collect.live.collect_for_fit`` or a loaded
      ``--snapshot``); it is not changed (the pods are placed on an overlay).
    - ``manifests``: already-parsed YAML/JSON documents (dicts), e.g. from
      ``gpuctl.model.manifests.parse_manifest_text``: Pod, Job, Deployment,
      StatefulSet, ReplicaSet, PyTorchJob, MPIJob, JobSet, Volcano Job. Or, instead,
      ``gpus``: the quick form, one pod of ``gpus`` × ``resource`` with the node
      ``selectors`` (``k=v``) and ``tolerations`` (``KEY[=VALUE]:EFFECT``), ``replicas``
      of it placed together. Exactly one of ``manifests`` and ``gpus``.
    - ``namespace``: for documents that name none (and for ``gpus``).
    - ``assume``: ``uncordon=NODE``, ``untaint=NODE:KEY``, ``free=NODE``, applied
      before fitting.

    The document is ``gpuctl/fit/v1`` (docs/output.md); the exit code is 0 when
    every workload fits, 1 when one does not (or cannot be decided). Bad input
    raises ``gpuctl.errors.UsageError`` (one line; exit 2)."""
    if (manifests is None) == (gpus is None):
        raise UsageError("give manifests (-f FILE) or --gpus N, not both and not neither")
    if gpus is not None:
        templates = [quick_template(gpus, resource, list(selectors), list(tolerations), replicas, namespace)]
    else:
        if not isinstance(manifests, list) or not manifests:
            raise UsageError("no manifest documents to fit")
        if replicas != 1 or selectors or tolerations or resource != "nvidia.com/gpu":
            raise UsageError("--replicas, --selector, --toleration and --resource go with --gpus; a manifest says its own")
        templates = []
        for i, doc in enumerate(manifests, 1):
            if not isinstance(doc, dict):
                raise UsageError(f"manifest document {i} is not a Kubernetes object")
            templates += pod_templates(doc, namespace, source=f"manifest document {i}")
    return report_for(snap, templates, parse_assumptions(assume))


def manifest_templates(texts: Iterable[tuple[str, str]], namespace: str) -> list[PodTemplate]:
    """The pod templates of manifest texts, ``(text, source)`` each as
    ``model.manifests.read_manifest`` gives them, document by document, in order (a
    generator is read lazily: the first bad file stops it)."""
    out: list[PodTemplate] = []
    for text, source in texts:
        for i, doc in enumerate(parse_manifest_text(text, source), 1):
            out += pod_templates(doc, namespace, source=f"{source} (document {i})" if source else source)
    return out


def collection_for(templates: list[PodTemplate], assumptions: list[Assumption]) -> dict[str, Any]:
    """The arguments of ``collect_for_fit`` (and ``--snapshot``'s need) for these
    templates: their pod records, the nodes ``--assume free=`` empties, the
    namespaces of Kueue-queued templates, and whether any names a Volcano queue."""
    return {"pods": [pod_record(t, t.name, "gpuctl-fit-probe", "") for t in templates],
            "free_nodes": [a.node for a in assumptions if a.kind == "free"],
            "kueue_namespaces": sorted({t.namespace for t in templates if t.queue}),
            "volcano": any(t.volcano_queue for t in templates)}


def report_for(snap: Snapshot, templates: list[PodTemplate], assumptions: list[Assumption]) -> tuple[dict, int]:
    """The document for these pod templates (in order; what earlier ones take,
    later ones see) after the assumptions."""
    if not templates:
        raise UsageError("nothing to fit: the manifests hold no pod template")
    overlay = overlay_of(snap)
    apply_assumptions(overlay, assumptions)
    placer = Placer(overlay)
    quota = QuotaRoom(overlay)
    groups: dict[tuple[str, str], list[PodTemplate]] = {}
    for t in templates:
        groups.setdefault((t.namespace, t.workload), []).append(t)
    workloads = [_workload(overlay, placer, quota, ts, assumptions) for ts in groups.values()]
    fits = all(w["fits"] for w in workloads)
    prefix = _prefix(assumptions)
    if len(workloads) == 1:
        summary = workloads[0]["summary"]
    else:
        ok = sum(1 for w in workloads if w["fits"])
        summary = f"{prefix}{ok} of {len(workloads)} workloads fit" + ("" if fits else ": " + "; ".join(
            w["summary"] for w in workloads if not w["fits"]))
    notes = []
    if snap.gaps:
        notes.append("Some data could not be read: " + "; ".join(g.describe() for _, g in sorted(snap.gaps.items())))
    doc = {
        "schema": SCHEMA,
        "source": snap.source,
        "context": snap.context,
        "assumptions": [a.to_dict() for a in assumptions],
        "fits": fits,
        "summary": summary,
        "workloads": workloads,
        "notes": notes,
    }
    bad = snap.unreadable()
    if bad:
        from ..model.snapshot import unreadable_dicts

        doc["unreadable"] = unreadable_dicts(bad)
    return doc, 0 if fits else 1


def _prefix(assumptions: list[Assumption]) -> str:
    if not assumptions:
        return ""
    texts = [a.text for a in assumptions]
    return "after " + (", ".join(texts[:-1]) + " and " + texts[-1] if len(texts) > 1 else texts[0]) + ", "


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _num(v: float) -> Any:
    return int(v) if v == int(v) else round(v, 3)


def _workload(overlay: Snapshot, placer: Placer, quota: QuotaRoom, templates: list[PodTemplate],
              assumptions: list[Assumption]) -> dict[str, Any]:
    first = templates[0]
    ref, ns = first.workload, first.namespace
    rows = []
    raw_requests: dict[int, dict[str, float]] = {}
    totals: dict[str, float] = {}
    stopped: Optional[dict[str, Any]] = None
    fit_count = 0
    undecided = False
    for t in templates:
        # ResourceQuota admits pods at creation, before any scheduling: a pod it refuses
        # never exists, so it takes no node and the ones after it see none taken.
        probe = pod_record(t, "quota-probe", "gpuctl-fit-probe", placer.created)
        admits, q_findings, q_lines = quota.admit(t, pod_requests(probe), probe, t.replicas)
        tf = placer.place(t, limit=admits)
        pod = probe
        for r, q in pod_requests(probe).items():
            totals[r] = totals.get(r, 0.0) + q * t.replicas
        n_fit = tf.placed
        fit_count += n_fit
        undecided = undecided or tf.undecided
        d = tf.blocking or tf.first
        findings = list(q_findings) + (list(d.findings) if d is not None else [])
        checks = list(d.checks) if d is not None else []
        checks.append(CheckResult("quota", Status.SKIPPED if admits is None else Status.FAILED if q_findings else Status.PASSED,
                                  "; ".join(q_lines) if admits is None else ("quota-exceeded" if q_findings else "; ".join(q_lines)),
                                  essential=False))
        notes = list(d.notes) if d is not None else []
        spec = pod.spec
        if spec.priorityClassName or spec.priority:
            notes.append(f"The pods have priority {spec.priorityClassName or spec.priority}: fit counts only free resources; "
                         "the scheduler may preempt lower-priority pods for them (try --assume free=NODE to see a node emptied).")
        if stopped is None:
            if admits is not None and tf.placed == admits < t.replicas and q_findings:
                f = q_findings[0]
                stopped = {"template": t.role, "replica": admits + 1, "pod": None, "code": f.code, "summary": f.summary}
            elif tf.blocking is not None:
                top = tf.blocking.findings[0] if tf.blocking.findings else None
                stopped = {"template": t.role, "replica": (tf.blocked_replica or 0) + 1,
                           "pod": tf.blocking.target.get("name"),
                           "code": top.code if top else None,
                           "summary": top.summary if top else "no check recognised why it fits nowhere: see checks and nodes"}
        raw_requests[id(t)] = pod_requests(probe)
        rows.append({
            "role": t.role,
            "replicas": t.replicas,
            "requests": {r: _num(q) for r, q in sorted(raw_requests[id(t)].items(), key=lambda kv: (not kv[0].count("/"), kv[0]))},
            "placed": tf.placed,
            "quotaAdmits": admits,
            "fit": n_fit,
            "placements": tf.placements,
            "findings": [f.to_dict() for f in _ranked(findings)],
            "checks": [c.to_dict() for c in checks],
            "nodes": tf.ranked,
            "notes": notes,
        })
    queue: Optional[QueueVerdict] = None
    if first.volcano_queue and (first.pod.get("spec", {}).get("schedulerName") in ("volcano", None)):
        total_replicas = sum(t.replicas for t in templates) or 1
        share = (first.min_available if first.min_available is not None else total_replicas) / total_replicas
        queue = volcano_admission(overlay, ref, ns, first.volcano_queue, {r: q * share for r, q in totals.items()})
    elif first.queue:
        queue = kueue_admission(overlay, ref, ns, first.queue,
                                [((t.role or "main").lower(), t.replicas, raw_requests[id(t)], t.pod.get("spec") or {})
                                 for t in templates])
    needed = sum(t.replicas for t in templates)
    if first.min_available is not None:
        needed = min(needed, first.min_available)
    if queue is not None and queue.admitted is False:
        if queue.finding is not None:
            rows[0]["findings"].insert(0, queue.finding.to_dict())
        stopped = {"template": None, "replica": 1, "pod": None, "code": "queue-not-admitted",
                   "summary": queue.finding.summary if queue.finding else f"queue {queue.name} would not admit it"}
        fit_count = 0
    fits = not undecided and fit_count >= needed and (queue is None or queue.admitted is not False)
    verdict = "inconclusive" if undecided else "fits" if fits else "partial" if fit_count > 0 else "blocked"
    total = sum(t.replicas for t in templates)
    prefix = _prefix(assumptions)
    if verdict == "inconclusive":
        summary = f"{prefix}gpuctl cannot tell whether {ref} fits: the nodes or their pods could not be read"
    elif total == 1:
        best = rows[0]["placements"][0] if rows[0]["placements"] else None
        summary = (f"{prefix}{ref} fits: best node {best['node']} (MostAllocated score {best['score']})" if fits and best
                   else f"{prefix}{ref} would stay Pending" + (f": {stopped['code']}: {stopped['summary']}" if stopped and stopped.get("code") else ""))
    else:
        what = "replica" if total == 1 else "replicas"
        summary = f"{prefix}{fit_count} of {total} {what} of {ref} fit"
        if first.min_available is not None and first.min_available != total:
            summary += f" (minAvailable {first.min_available})"
        if stopped is not None and not fits:
            summary += (f"; the {_ordinal(stopped['replica'])}" + (f" {stopped['template']}" if stopped.get("template") else "")
                        + f" is stopped by {stopped['code'] or 'an unrecognised cause'}: {stopped['summary']}")
    return {
        "workload": ref, "kind": first.kind, "namespace": ns, "name": first.name,
        "replicas": total, "minAvailable": first.min_available, "fit": fit_count, "fits": fits, "verdict": verdict,
        "summary": summary, "stoppedBy": None if fits else stopped,
        "queue": queue.to_dict() if queue is not None else None,
        "templates": rows,
    }


def _ranked(findings: list[Finding]) -> list[Finding]:
    from ..engine.ranking import merge

    return merge(findings)
