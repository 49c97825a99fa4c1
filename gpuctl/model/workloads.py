"""Workloads and their pods: the kinds `diagnose pod KIND/NAME` accepts, and which
pods belong to a workload (owner references, a Deployment's ReplicaSets, the labels
that name a workload for kinds whose pods carry no direct owner). Pure functions over
the snapshot, used by the collectors (what to read) and the checks (what to judge)."""

from __future__ import annotations

from ..errors import UsageError
from .objects import GenericObject, Pod
from .snapshot import Snapshot

KINDS = {
    "job": "Job", "jobs": "Job", "deployment": "Deployment", "deploy": "Deployment", "deployments": "Deployment",
    "statefulset": "StatefulSet", "sts": "StatefulSet", "replicaset": "ReplicaSet", "rs": "ReplicaSet",
    "daemonset": "DaemonSet", "ds": "DaemonSet", "pytorchjob": "PyTorchJob", "mpijob": "MPIJob",
    "jobset": "JobSet", "vcjob": "Job", "podgroup": "PodGroup", "workload": "Workload",
}
VOLCANO_JOB_API = "batch.volcano.sh"
# Labels that name a pod's workload, for kinds whose pods carry no direct owner.
POD_LABELS = {
    "Job": ("batch.kubernetes.io/job-name", "job-name"),
    "PyTorchJob": ("training.kubeflow.org/job-name",),
    "MPIJob": ("training.kubeflow.org/job-name",),
    "JobSet": ("jobset.sigs.k8s.io/jobset-name",),
    "vcjob": ("volcano.sh/job-name",),
}


def resolve_kind(kind: str) -> str:
    real = KINDS.get(kind.lower())
    if real is None:
        raise UsageError(f"unknown workload kind {kind!r}; use one of: {', '.join(sorted(set(KINDS)))}")
    return real


def pods_of(snap: Snapshot, obj: GenericObject, alias: str) -> list[Pod]:
    ns, name, uid = obj.metadata.namespace, obj.metadata.name, obj.metadata.uid
    owners = {uid}
    if obj.kind == "Deployment":
        owners |= {rs.metadata.uid for rs in snap.objects("ReplicaSet")
                   if any(o.uid == uid or (o.kind == "Deployment" and o.name == name) for o in rs.metadata.ownerReferences)}
    if obj.kind == "Workload":
        owners |= {o.uid for o in obj.metadata.ownerReferences}
    labels = POD_LABELS.get("vcjob" if alias == "vcjob" else obj.kind, ())
    out = []
    for p in snap.pods.values():
        if p.metadata.namespace != ns:
            continue
        if any(o.uid in owners for o in p.metadata.ownerReferences if o.uid):
            out.append(p)
        elif any(p.metadata.labels.get(k) == name for k in labels):
            out.append(p)
        elif obj.kind == "PodGroup" and p.metadata.annotations.get("scheduling.k8s.io/group-name") == name:
            out.append(p)
        elif obj.kind == "Deployment" and any(o.kind == "ReplicaSet" and o.name.startswith(name + "-")
                                              for o in p.metadata.ownerReferences):
            out.append(p)
    return sorted(out, key=lambda p: p.metadata.name)
