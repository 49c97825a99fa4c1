"""The workload's own check (target ``workload``, ``KIND/NAME``): when its pods are
refused or never made because quota, admission or a queue held them, the
workload's objects and events say so. The engine (gpuctl/engine/workload.py)
diagnoses its pods and runs this check beside them."""

from __future__ import annotations

import re
from typing import Iterable, Optional

from ..findings import Finding, Fix
from ..model.objects import GenericObject
from ..model.quantity import parse_quantity
from ..model.requests import pod_requests
from ..model.snapshot import EVENTS, QUEUES, QUOTAS, Snapshot
from . import kueue
from .base import check
from .context import human_age
from .memo import Memo

# apiserver ResourceQuota admission (staging/src/k8s.io/apiserver/pkg/admission/plugin/resourcequota/controller.go)
QUOTA_RE = re.compile(r"[Ee]xceeded quota: (?P<quota>[^,]+), requested: (?P<requested>.*?), used: (?P<used>.*?), limited: (?P<limited>[^\n]*)")
# apiserver ResourceQuota admission when a quota covers a resource the pod does not set
# ("failed quota: %s: must specify %s", same controller.go); e.g. hmcts/cnp-flux-config#13765
QUOTA_SPECIFY_RE = re.compile(r"failed quota: (?P<quota>[^:\n]{1,253}): must specify (?P<what>[^\n]{1,500})")
# apiserver ResourceQuota admission when the quota's status does not (yet) track a
# resource its spec limits ("status unknown for quota: %s, resources: %s"; before 1.10
# "status unknown for quota: %s"); e.g. kubernetes/kubernetes#46639
QUOTA_UNKNOWN_RE = re.compile(r"status unknown for quota: (?P<quota>[^,\s]{1,253})(?:, resources?: (?P<what>[^\n]{1,500}))?")
RUNTIMECLASS_RE = re.compile(r'RuntimeClass "(?P<name>[^"]+)" not found')


def _template_requests(obj: GenericObject) -> dict[str, float]:
    """What one pod of the workload requests: its pod template, or for a Volcano Job
    (its templates are per task, spec.tasks[].template) the largest task's."""
    spec = obj.spec or {}
    tmpl = (spec.get("template") or {}).get("spec")
    if not isinstance(tmpl, dict):
        tasks = [t.get("template", {}).get("spec") for t in spec.get("tasks") or [] if isinstance(t, dict)]
        best: dict[str, float] = {}
        for t in tasks:
            if isinstance(t, dict):
                req = _pod_requests_of(t)
                if sum(req.values()) > sum(best.values()):
                    best = req
        return best
    return _pod_requests_of(tmpl)


def _pod_requests_of(tmpl: dict) -> dict[str, float]:
    from ..model.objects import decode_salvaging

    pod, _ = decode_salvaging("Pod", {"spec": tmpl})   # a bad quantity in the template must not sink the report
    return pod_requests(pod) if pod is not None else {}


class WorkloadContext:
    """What the workload's check reads: the object, how the user named it
    (``ref``: ``job/x``) and whether it has pods."""

    def __init__(self, snap: Snapshot, obj: GenericObject, ref: str, has_pods: bool, memo: Optional[Memo] = None):
        self.snap, self.obj, self.ref, self.has_pods = snap, obj, ref, has_pods
        self.memo = memo if memo is not None else Memo()

    @property
    def ns(self) -> str:
        return self.obj.metadata.namespace or "default"

    @property
    def name(self) -> str:
        return self.obj.metadata.name


@check("workload-events", target="workload", codes=["quota-exceeded"], also=["runtime-class-missing", "queue-not-admitted"],
       reads=(EVENTS, QUOTAS, QUEUES))
def workload_events(ctx: WorkloadContext) -> Iterable[Finding]:
    """Quota that refused the pods (FailedCreate, or no room left for one), a
    RuntimeClass that does not exist, a suspended (not admitted) workload."""
    yield from _quota(ctx)
    yield from _runtime_class(ctx)
    yield from _suspended(ctx)
    yield from _podgroup(ctx)


def _events(ctx: WorkloadContext) -> list:
    """The workload's events, oldest first (a Deployment's include its ReplicaSets')."""
    snap, obj = ctx.snap, ctx.obj
    events = snap.events_for(obj.kind, ctx.ns, ctx.name)
    if obj.kind == "Deployment":   # the ReplicaSet, not the Deployment, records FailedCreate
        for rs in snap.objects("ReplicaSet"):
            if any(o.uid == obj.metadata.uid for o in rs.metadata.ownerReferences):
                events += snap.events_for("ReplicaSet", ctx.ns, rs.metadata.name)
        events.sort(key=lambda e: e.last_seen or "")
    return events


def _quota(ctx: WorkloadContext) -> Iterable[Finding]:
    """The apiserver's quota refusal (FailedCreate); else, for a workload with no
    pods, a quota that has no room for one pod of its template."""
    snap, ns, ref = ctx.snap, ctx.ns, ctx.ref
    for e in reversed(_events(ctx)):
        m = QUOTA_RE.search(e.message or "")
        if m and e.reason == "FailedCreate":
            age = snap.age_seconds(e.last_seen)
            yield Finding(
                "quota-exceeded",
                f"ResourceQuota {m.group('quota')} refuses the pods of {ref}: requested {m.group('requested')}, "
                f"used {m.group('used')}, limited {m.group('limited')}",
                evidence=[f"event FailedCreate x{e.times} on {ref} (last {human_age(age)} ago): {e.message}"],
                root_cause=True, disruption=1,
                fixes=[Fix("Free quota (finished pods still count until deleted), lower the request, or raise the quota",
                           [f"kubectl -n {ns} describe resourcequota {m.group('quota')}",
                            f"kubectl -n {ns} get pods --field-selector status.phase=Running -o wide"])])
            return
    for e in reversed(_events(ctx)):
        m = QUOTA_SPECIFY_RE.search(e.message or "")
        if m and e.reason in ("FailedCreate", "FailedCreatePod"):
            what = m.group("what").strip().rstrip(".")
            yield Finding(
                "quota-exceeded",
                f"ResourceQuota {m.group('quota')} refuses the pods of {ref}: every pod must specify {what}, and the "
                "pod template does not (freeing quota will not help)",
                evidence=[f"event {e.reason} x{e.times} on {ref}: {e.message}"], root_cause=True, disruption=1,
                fixes=[Fix(f"Set {what} in every container of {ref} (or give the namespace a LimitRange with defaults)",
                           [f"kubectl -n {ns} describe resourcequota {m.group('quota')}",
                            f"kubectl -n {ns} edit {ref}   # spec.template.spec.containers[*].resources: set {what}"],
                           needs_judgement="the amounts are your call")])
            return
    for e in reversed(_events(ctx)):
        m = QUOTA_UNKNOWN_RE.search(e.message or "")
        if m and e.reason in ("FailedCreate", "FailedCreatePod"):
            name = m.group("quota")
            q = next((q for q in snap.quotas if q.metadata.namespace == ns and q.metadata.name == name), None)
            untracked = sorted(k for k in (q.spec.hard if q else {}) if k not in q.status.hard) if q else []
            what = m.group("what") or ", ".join(untracked)
            evidence = [f"event {e.reason} x{e.times} on {ref}: {e.message}"]
            if untracked:
                evidence.append(f"resourcequota/{name} limits {', '.join(untracked)} in spec.hard, but its status "
                                "does not track them (status.hard lacks them)")
            yield Finding(
                "quota-exceeded",
                f"ResourceQuota {name} refuses every pod of {ref}: its status does not track "
                + (what or "a resource it limits") + ", so quota admission cannot decide and forbids the pod",
                evidence=evidence, root_cause=True, disruption=1,
                fixes=[Fix(f"Remove the entries the quota system cannot track from resourcequota/{name} (extended resources "
                           "are quota'd as requests.<resource> since Kubernetes 1.10), or check that the "
                           "kube-controller-manager's quota controller runs and updates its status",
                           [f"kubectl -n {ns} get resourcequota {name} -o yaml",
                            f"kubectl -n {ns} edit resourcequota {name}   # spec.hard: drop or rename {what or 'the untracked entries'}"],
                           needs_judgement="the quota is the namespace owner's policy: agree the change")])
            return
    if QUOTAS in snap.gaps or ctx.has_pods:
        return
    req = _template_requests(ctx.obj)
    for q in snap.quotas:
        if q.metadata.namespace != ns:
            continue
        for key, hard in q.status.hard.items():
            res = key[len("requests."):] if key.startswith("requests.") else key
            if res not in req:
                continue
            used = parse_quantity(q.status.used.get(key, 0))
            if used + req[res] > parse_quantity(hard):
                yield Finding(
                    "quota-exceeded",
                    f"ResourceQuota {q.metadata.name} has no room for a pod of {ref}: {key} used {q.status.used.get(key, 0)} of {hard}, "
                    f"one pod needs {req[res]:g}",
                    evidence=[f"resourcequota/{q.metadata.name} {key}: hard {hard}, used {q.status.used.get(key, 0)}"],
                    root_cause=True, disruption=1,
                    fixes=[Fix("Free quota or raise it", [f"kubectl -n {ns} describe resourcequota {q.metadata.name}"])])


def _runtime_class(ctx: WorkloadContext) -> Iterable[Finding]:
    for e in reversed(_events(ctx)):
        m = RUNTIMECLASS_RE.search(e.message or "")
        if m and e.reason == "FailedCreate":
            yield Finding(
                "runtime-class-missing", f"The pods of {ctx.ref} name RuntimeClass {m.group('name')}, which does not exist",
                evidence=[f"event FailedCreate on {ctx.ref}: {e.message}"], root_cause=True, disruption=1,
                fixes=[_runtime_class_fix(ctx.snap, ctx.ns, ctx.obj, m.group("name"))])
            return


def _podgroup(ctx: WorkloadContext) -> Iterable[Finding]:
    """A gang-scheduled workload (Volcano, coscheduling) with no pods: its PodGroup
    is still Pending or Inqueue, so the queue has not admitted it; the PodGroup's
    conditions and events and its Queue's state say why."""
    if ctx.has_pods:
        return
    obj, ns = ctx.obj, ctx.ns
    groups = [g for g in ctx.snap.objects("PodGroup") if g.metadata.namespace == ns and (
        any(o.uid == obj.metadata.uid or o.name == obj.metadata.name for o in g.metadata.ownerReferences)
        or g.metadata.name == obj.metadata.name)]
    for g in groups:
        status = g.status or {}
        phase = status.get("phase") or "Pending"
        if phase not in ("Pending", "Inqueue"):
            continue
        evidence = [f"podgroup/{g.metadata.name} phase {phase}"]
        for c in status.get("conditions") or []:
            if isinstance(c, dict) and c.get("status") == "True":
                evidence.append(f"podgroup/{g.metadata.name} {c.get('type')} ({c.get('reason')}): {c.get('message', '')}")
        evidence += [f"event {e.reason} on podgroup/{g.metadata.name}: {e.message}"
                     for e in ctx.snap.events_for("PodGroup", ns, g.metadata.name)[-3:]]
        queue_name = (g.spec or {}).get("queue") or "default"
        queue = next((q for q in ctx.snap.objects("Queue") if q.metadata.name == queue_name), None)
        if queue is not None:
            qs = queue.status or {}
            cap = (queue.spec or {}).get("capability")
            evidence.append(f"queue/{queue_name}: state {qs.get('state', '?')}"
                            + (f", capability {cap}" if cap else "") + (f", pending {qs['pending']}" if "pending" in qs else ""))
        yield Finding("queue-not-admitted",
                      f"{ctx.ref} has no pods: its PodGroup {g.metadata.name} is {phase}, not admitted by queue {queue_name}",
                      evidence=evidence, root_cause=True, disruption=1,
                      fixes=[Fix("See why the queue holds it (capability, other groups' minResources, webhooks)",
                                 [f"kubectl -n {ns} describe podgroup {g.metadata.name}",
                                  f"kubectl get queue {queue_name} -o yaml"])])
        return


def _suspended(ctx: WorkloadContext) -> Iterable[Finding]:
    """A suspended workload: Kueue (or whoever suspended it) has not admitted it."""
    obj, ns = ctx.obj, ctx.ns
    if (obj.spec or {}).get("suspend") is not True:
        return
    queue = obj.metadata.labels.get("kueue.x-k8s.io/queue-name")
    evidence = [f"{ctx.ref} spec.suspend: true"]
    fixes: list[Fix] = []
    summary = f"{ctx.ref} is suspended" + (f": Kueue has not admitted it (LocalQueue {queue})" if queue else "")
    for w in ctx.snap.objects("Workload"):
        if w.metadata.namespace == ns and any(o.uid == obj.metadata.uid for o in w.metadata.ownerReferences):
            for c in (w.status or {}).get("conditions") or []:
                if c.get("status") == "False" and c.get("type") in ("QuotaReserved", "Admitted"):
                    evidence.append(f"workload/{w.metadata.name} {c.get('type')}=False ({c.get('reason')}): {c.get('message', '')}")
            hold = kueue.explain_workload(ctx.snap, ns, w)   # the quota per flavor, the cohort, the queue order
            if hold.summary:
                summary = f"{ctx.ref} is suspended: " + hold.summary[0].lower() + hold.summary[1:]
                evidence += [line for line in hold.evidence if line not in evidence]
                fixes += hold.fixes
            break
    yield Finding("queue-not-admitted", summary, evidence=evidence, root_cause=True, disruption=1,
                  fixes=fixes or [Fix("See why the queue holds it", [f"kubectl -n {ns} get workloads.kueue.x-k8s.io -o wide",
                                                                     "kubectl get clusterqueue -o wide"])])


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
