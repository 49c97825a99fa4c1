"""Diagnosing a workload (``KIND/NAME``): its pods that are not running, grouped
by shared cause, and — when no pod exists because quota, admission or a queue
refused them — the workload's own objects and events."""

from __future__ import annotations

import difflib
import re
from typing import Any, Optional


from ..errors import TargetNotFound, UsageError
from ..findings import CheckResult, Diagnosis, Finding, Fix, Status
from ..model.objects import GenericObject, Pod
from ..model.quantity import parse_quantity
from ..model.requests import pod_requests
from ..model.snapshot import QUOTAS, Snapshot
from ..model.workloads import KINDS, POD_LABELS, VOLCANO_JOB_API, pods_of, resolve_kind  # noqa: F401 (re-exported)
from .context import human_age

# apiserver ResourceQuota admission (staging/src/k8s.io/apiserver/pkg/admission/plugin/resourcequota/controller.go)
QUOTA_RE = re.compile(r"[Ee]xceeded quota: (?P<quota>[^,]+), requested: (?P<requested>.*?), used: (?P<used>.*?), limited: (?P<limited>[^\n]*)")
_STATUS_ORDER = {Status.PASSED: 0, Status.FAILED: 1, Status.ERROR: 2, Status.SKIPPED: 3}
RUNTIMECLASS_RE = re.compile(r'RuntimeClass "(?P<name>[^"]+)" not found')


def _find(snap: Snapshot, kind: str, alias: str, ns: str, name: str) -> Optional[GenericObject]:
    for o in snap.objects(kind):
        if o.metadata.name == name and o.metadata.namespace in (ns, None):
            is_volcano = o.apiVersion.startswith(VOLCANO_JOB_API)
            if kind == "Job" and (alias == "vcjob") != is_volcano:
                continue
            return o
    return None


def _template_requests(obj: GenericObject) -> dict[str, float]:
    tmpl = ((obj.spec or {}).get("template") or {}).get("spec")
    if not isinstance(tmpl, dict):
        return {}
    from ..model.objects import decode_salvaging

    pod, _ = decode_salvaging("Pod", {"spec": tmpl})   # a bad quantity in the template must not sink the report
    return pod_requests(pod) if pod is not None else {}


def _own_findings(snap: Snapshot, obj: GenericObject, ref: str, has_pods: bool) -> list[Finding]:
    ns, name = obj.metadata.namespace or "default", obj.metadata.name
    events = snap.events_for(obj.kind, ns, name)
    if obj.kind == "Deployment":   # the ReplicaSet, not the Deployment, records FailedCreate
        for rs in snap.objects("ReplicaSet"):
            if any(o.uid == obj.metadata.uid for o in rs.metadata.ownerReferences):
                events += snap.events_for("ReplicaSet", ns, rs.metadata.name)
        events.sort(key=lambda e: e.last_seen or "")
    out: list[Finding] = []
    for e in reversed(events):
        m = QUOTA_RE.search(e.message or "")
        if m and e.reason == "FailedCreate":
            age = snap.age_seconds(e.last_seen)
            out.append(Finding(
                "quota-exceeded",
                f"ResourceQuota {m.group('quota')} refuses the pods of {ref}: requested {m.group('requested')}, "
                f"used {m.group('used')}, limited {m.group('limited')}",
                evidence=[f"event FailedCreate x{e.times} on {ref} (last {human_age(age)} ago): {e.message}"],
                root_cause=True, disruption=1,
                fixes=[Fix("Free quota (finished pods still count until deleted), lower the request, or raise the quota",
                           [f"kubectl -n {ns} describe resourcequota {m.group('quota')}",
                            f"kubectl -n {ns} get pods --field-selector status.phase=Running -o wide"])]))
            break
    if not any(f.code == "quota-exceeded" for f in out) and QUOTAS not in snap.gaps and not has_pods:
        req = _template_requests(obj)
        for q in snap.quotas:
            if q.metadata.namespace != ns:
                continue
            for key, hard in q.status.hard.items():
                res = key[len("requests."):] if key.startswith("requests.") else key
                if res not in req:
                    continue
                used = parse_quantity(q.status.used.get(key, 0))
                if used + req[res] > parse_quantity(hard):
                    out.append(Finding(
                        "quota-exceeded",
                        f"ResourceQuota {q.metadata.name} has no room for a pod of {ref}: {key} used {q.status.used.get(key, 0)} of {hard}, "
                        f"one pod needs {req[res]:g}",
                        evidence=[f"resourcequota/{q.metadata.name} {key}: hard {hard}, used {q.status.used.get(key, 0)}"],
                        root_cause=True, disruption=1,
                        fixes=[Fix("Free quota or raise it", [f"kubectl -n {ns} describe resourcequota {q.metadata.name}"])]))
    for e in reversed(events):
        m = RUNTIMECLASS_RE.search(e.message or "")
        if m and e.reason == "FailedCreate":
            out.append(Finding(
                "runtime-class-missing", f"The pods of {ref} name RuntimeClass {m.group('name')}, which does not exist",
                evidence=[f"event FailedCreate on {ref}: {e.message}"], root_cause=True, disruption=1,
                fixes=[_runtime_class_fix(snap, ns, obj, m.group("name"))]))
            break
    if (obj.spec or {}).get("suspend") is True:
        queue = obj.metadata.labels.get("kueue.x-k8s.io/queue-name")
        evidence = [f"{ref} spec.suspend: true"]
        for w in snap.objects("Workload"):
            if w.metadata.namespace == ns and any(o.uid == obj.metadata.uid for o in w.metadata.ownerReferences):
                for c in (w.status or {}).get("conditions") or []:
                    if c.get("status") == "False" and c.get("type") in ("QuotaReserved", "Admitted"):
                        evidence.append(f"workload/{w.metadata.name} {c.get('type')}=False ({c.get('reason')}): {c.get('message', '')}")
        summary = f"{ref} is suspended" + (f": Kueue has not admitted it (LocalQueue {queue})" if queue else "")
        out.append(Finding("queue-not-admitted", summary, evidence=evidence, root_cause=True, disruption=1,
                           fixes=[Fix("See why the queue holds it", [f"kubectl -n {ns} get workloads.kueue.x-k8s.io -o wide",
                                                                     "kubectl get clusterqueue -o wide"])]))
    return out


def diagnose_workload(snap: Snapshot, namespace: str, alias: str, name: str) -> Diagnosis:
    from ..engine import diagnose_pod, merge, verdict_for

    kind = resolve_kind(alias)
    obj = _find(snap, kind, alias, namespace, name)
    ref = f"{alias}/{name}"
    if obj is None:
        from ..model.names import suggest

        names = [o.metadata.name for o in snap.objects(kind) if o.metadata.namespace == namespace]
        names += [o.name for p in snap.pods.values() if p.metadata.namespace == namespace
                  for o in p.metadata.ownerReferences if o.kind == kind]
        raise TargetNotFound(f"{kind} {name!r} not found in namespace {namespace}", suggest(name, names))
    pods = pods_of(snap, obj, alias)
    findings: list[Finding] = []
    checks: list[CheckResult] = []
    pod_rows = []
    groups: dict[str, list[str]] = {}
    nodes: list[dict[str, Any]] = []
    for p in pods:
        d = diagnose_pod(snap, namespace, p.metadata.name, pod=p)
        top = d.findings[0].code if d.findings else None
        pod_rows.append({"name": p.metadata.name, "phase": p.phase, "node": p.spec.nodeName or None,
                         "verdict": d.verdict, "top": top})
        if d.verdict == "healthy":
            continue
        if top:
            groups.setdefault(top, []).append(p.metadata.name)
        for f in d.findings:
            if not any(f.code == g.code for g in findings):
                findings.append(f)
            else:
                for g in findings:
                    if g.code == f.code:
                        g.evidence += [x for x in f.evidence if x not in g.evidence][:3]
        for c in d.checks:   # keep the worst status seen for each check across the pods
            have = next((k for k in checks if k.name == c.name), None)
            if have is None:
                checks.append(c)
            elif _STATUS_ORDER[c.status] > _STATUS_ORDER[have.status]:
                checks[checks.index(have)] = c
        nodes = nodes or d.nodes
    for code, members in groups.items():
        for f in findings:
            if f.code == code and len(pods) > 1:
                f.evidence.insert(0, f"{len(members)} of {len(pods)} pods share this cause: {', '.join(members[:5])}"
                                  + (" …" if len(members) > 5 else ""))
    own = _own_findings(snap, obj, ref, bool(pods))
    findings = merge(own + findings)
    checks.append(CheckResult("workload-events", Status.FAILED if own else Status.PASSED,
                              ", ".join(f.code for f in own), essential=False))
    if not pods and not own:
        last = [f"{e.reason}: {e.message}" for e in snap.events_for(obj.kind, namespace, name)[-3:]]
        checks.append(CheckResult("workload-pods", Status.SKIPPED,
                                  f"{ref} has no pods and its events name no known cause"
                                  + (f" (last events: {' | '.join(last)})" if last else " (no events)"), essential=True))
    verdict = verdict_for(findings, checks, bound=any(p.spec.nodeName for p in pods))
    shown_kind = "Job.batch.volcano.sh" if alias == "vcjob" else kind
    target = {"kind": shown_kind, "namespace": namespace, "name": name, "phase": None, "node": None, "pods": pod_rows}
    notes = ["Some data the verdict depends on could not be read; the findings show what the rest supports."] \
        if verdict == "inconclusive" else []
    return Diagnosis(target=target, verdict=verdict, findings=findings, checks=checks, nodes=nodes, notes=notes)


def _runtime_class_fix(snap: Snapshot, ns: str, obj, missing: str) -> Fix:
    """Point the template at the GPU Operator's RuntimeClass when it exists, else
    say which to create or choose."""
    from .fixes import workload_change_commands

    if obj.kind in ("Job", "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet") and "nvidia" in snap.runtime_classes:
        return Fix(f"Use the existing RuntimeClass 'nvidia' instead of '{missing}' (or create '{missing}')",
                   ["kubectl get runtimeclass",
                    *workload_change_commands(ns, obj, [{"op": "replace", "path": "/runtimeClassName", "value": "nvidia"}])])
    return Fix(f"Create the RuntimeClass '{missing}' (the GPU Operator names its own 'nvidia'), or set "
               f"spec.template.spec.runtimeClassName of {obj.kind.lower()}/{obj.metadata.name} to one that exists",
               ["kubectl get runtimeclass", f"kubectl -n {ns} edit {obj.kind.lower()}/{obj.metadata.name}"
                f"   # spec.template.spec.runtimeClassName: {missing} now; set an existing RuntimeClass"],
               needs_judgement="which RuntimeClass the nodes support is your call")
