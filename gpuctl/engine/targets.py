"""Finding what the user named: a pod, a node, a workload, from what they typed
(kubectl's spellings), with "did you mean" hints when it is not there."""

from __future__ import annotations

from typing import Optional

from ..errors import TargetNotFound
from ..model.names import suggest, workload_of_pods
from ..model.objects import Pod
from ..model.snapshot import NODES as NODES_KEY, Snapshot


def unreadable_target(snap: Snapshot, kind: str, namespace: Optional[str], name: str) -> None:
    """A target that exists but could not be decoded at all is a source error
    (exit 4) naming the field, never "not found" (exit 3)."""
    lost = [u for u in snap.problems_of(kind, namespace, name) if not u.kept]
    if lost:
        from ..errors import SourceError

        ref = f"{kind.lower()} {namespace + '/' if namespace else ''}{name}"
        u = lost[0]
        raise SourceError(f"{ref} could not be read: {u.field + ': ' if u.field else ''}{u.problem}"
                          + (f" (in {u.source})" if u.source else ""),
                          "the object is malformed where gpuctl reads it; check it with kubectl get -o json")


def find_pod(snap: Snapshot, namespace: str, name: str) -> Pod:
    pod = snap.pods.get(f"{namespace}/{name}")
    if pod is not None:
        return pod
    unreadable_target(snap, "Pod", namespace, name)
    elsewhere = sorted(p.metadata.namespace or "" for p in snap.pods.values() if p.metadata.name == name)
    hint = None
    if elsewhere:
        hint = f"a pod of that name exists in namespace(s) {', '.join(elsewhere)}: try -n {elsewhere[0]}"
    else:
        names = {p.metadata.name for p in snap.pods.values() if p.metadata.namespace == namespace}
        owners = [w for w in workload_of_pods(name, [(o.kind, o.name, p.metadata.labels.get("pod-template-hash"))
                                                     for p in snap.pods.values() if p.metadata.namespace == namespace
                                                     for o in p.metadata.ownerReferences])
                  if not w.startswith("deployment/") or snap.find("Deployment", namespace, name) is not None]
        close = suggest(name, names)
        if owners:
            hint = f"{name} is {' and '.join(owners)}: gpuctl diagnose pod {owners[0]} -n {namespace}"
        elif close:
            hint = close
        elif snap.namespaces is not None and namespace not in snap.namespaces:
            hint = (f"the snapshot holds namespace(s) {', '.join(snap.namespaces)} only; save one of {namespace} "
                    f"(gpuctl snapshot save FILE -n {namespace})")
    raise TargetNotFound(f'pod "{name}" not found in namespace {namespace}', hint)


def find_node(snap: Snapshot, name: str):
    node = snap.nodes.get(name)
    if node is not None:
        return node
    unreadable_target(snap, "Node", None, name)
    if NODES_KEY in snap.gaps:
        from ..errors import SourceError

        raise SourceError(f"node {name}: {snap.gaps[NODES_KEY].describe()}")
    raise TargetNotFound(f'node "{name}" not found', suggest(name, snap.nodes))


def parse_target(target: str) -> tuple[Optional[str], str, Optional[str]]:
    """(kind, name, namespace) of what the user typed, as kubectl prints things:
    ``NAME``; ``KIND/NAME`` (``job/x``, ``deploy/x``); ``kind.group/name`` from
    ``kubectl get -o name`` (``job.batch/x``, ``pytorchjob.kubeflow.org/x``,
    ``pod/x``); ``NAMESPACE/NAME``, as gpuctl itself prints pods. A prefix that is
    a known kind wins over a namespace of the same name."""
    from ..model.workloads import KINDS

    if "/" not in target:
        return None, target, None
    head, _, name = target.partition("/")
    if "/" in name:
        from ..errors import UsageError

        raise UsageError(f"invalid target {target!r}: {name!r} is not a valid Kubernetes name "
                         "(give NAME, KIND/NAME or NAMESPACE/NAME)")
    lowered = head.lower()
    if lowered == "job.batch.volcano.sh":
        return "vcjob", name, None
    base = lowered.split(".", 1)[0]
    if base in ("pod", "pods", "po"):
        return "pod", name, None
    if base in KINDS or base in OTHER_KINDS or "." in lowered:
        return base, name, None   # a kind gpuctl does not diagnose is refused by name, not taken for a namespace
    return None, name, head


# Resource names kubectl knows that are not workloads gpuctl diagnoses: "cronjob/x"
# is a kind the user meant, never a namespace called "cronjob".
OTHER_KINDS = frozenset({
    "cronjob", "cronjobs", "cj", "node", "nodes", "no", "service", "services", "svc", "configmap", "configmaps", "cm",
    "secret", "secrets", "namespace", "namespaces", "ns", "persistentvolumeclaim", "persistentvolumeclaims", "pvc",
    "replicationcontroller", "replicationcontrollers", "rc", "event", "events", "ev", "ingress", "ingresses", "ing",
    "serviceaccount", "serviceaccounts", "sa", "endpoints", "ep", "lease", "leases"})


def resolve_pod_target(target: str, namespace: Optional[str], all_namespaces: bool
                       ) -> tuple[Optional[str], str, Optional[str], str]:
    """``diagnose pod TARGET [-n NS] [-A]`` made one meaning, for the CLI and the MCP
    tool alike: (kind, or None for a pod; its name; the namespace, from -n or from a
    NAMESPACE/NAME target; the target as diagnose() takes it). Each name is checked by
    Kubernetes' rules; UsageError (exit 2) on a target that contradicts -n or -A."""
    from ..errors import UsageError
    from ..model.names import valid_name

    kind, name, target_ns = parse_target(target)
    if not name:
        raise UsageError(f"invalid target {target!r}: give NAME, KIND/NAME or NAMESPACE/NAME")
    if target_ns is not None:
        valid_name("namespace", target_ns)
        if namespace and namespace != target_ns:
            raise UsageError(f"{target} names namespace {target_ns} but -n says {namespace}")
        namespace, target = target_ns, name
    if all_namespaces and (target_ns is not None or kind not in (None, "pod")):
        raise UsageError("-A finds a pod by NAME in every namespace; give a bare pod name")
    if kind == "pod":
        kind, target = None, name
    valid_name("pod" if kind is None else kind, name)
    return kind, name, namespace, target


def split_target(target: str) -> tuple[Optional[str], str]:
    kind, name, _ = parse_target(target)
    return kind, name


def find_pod_anywhere(snap: Snapshot, name: str) -> str:
    """``diagnose pod -A NAME``: the namespace of the one pod of that name."""
    from ..errors import TargetNotFound, UsageError

    spaces = sorted(p.metadata.namespace or "default" for p in snap.pods.values() if p.metadata.name == name)
    if len(spaces) == 1:
        return spaces[0]
    if spaces:
        raise UsageError(f"{len(spaces)} pods are named {name}: " + ", ".join(f"{s}/{name}" for s in spaces)
                         + "; give one as NAMESPACE/NAME")
    raise TargetNotFound(f'pod "{name}" not found in any namespace',
                         suggest(name, {f"{p.metadata.namespace or 'default'}/{p.metadata.name}" for p in snap.pods.values()}))
