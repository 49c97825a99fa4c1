"""Effective resource requests of a pod, as the scheduler computes them.

Kubernetes' rule (KEP-753 sidecars; ``resourcehelper.PodRequests``): the pod needs
the larger of
  * each regular init container's request plus the sidecars started before it, and
  * the sum of the app containers plus all sidecars,
plus ``spec.overhead``. For extended resources (GPUs) the API server defaults a
missing request to the limit, and snapshots pasted by hand may only carry limits,
so a container's request of a resource falls back to its limit.
"""

from __future__ import annotations

from collections import defaultdict

from .objects import Container, Pod
from .quantity import parse_quantity


def _quantity(value: object) -> float | None:
    try:
        return parse_quantity(value)
    except ValueError:
        return None


def container_requests(c: Container) -> dict[str, float]:
    """A container's requests, a missing request falling back to its limit. A value
    that is not a quantity counts as absent: records in a Snapshot have had such
    values removed and reported (gpuctl.model.objects.scrub_quantities); this only
    keeps a hand-built record from crashing a check."""
    out: dict[str, float] = {}
    for source in (c.resources.limits, c.resources.requests):
        for name, value in source.items():
            q = _quantity(value)
            if q is not None:
                out[name] = q
    return out


def pod_requests(pod: Pod) -> dict[str, float]:
    """Effective requests of every resource (cpu in cores, memory in bytes, devices as counts)."""
    apps: dict[str, float] = defaultdict(float)
    for c in pod.spec.containers:
        for k, v in container_requests(c).items():
            apps[k] += v
    sidecars: dict[str, float] = defaultdict(float)
    init_peak: dict[str, float] = defaultdict(float)
    for c in pod.spec.initContainers:
        req = container_requests(c)
        if c.restartPolicy == "Always":
            for k, v in req.items():
                sidecars[k] += v
        else:
            for k, v in req.items():
                init_peak[k] = max(init_peak[k], v + sidecars[k])
    total: dict[str, float] = {}
    for k in dict.fromkeys([*apps, *sidecars, *init_peak]):  # deterministic: order of first appearance
        total[k] = max(apps[k] + sidecars[k], init_peak[k])
    for k, v in pod.spec.overhead.items():
        total[k] = total.get(k, 0.0) + (_quantity(v) or 0.0)
    return {k: v for k, v in total.items() if v > 0}


def request_of(pod: Pod, resource: str) -> float:
    """The pod's effective request of one resource; the common pod (no init
    containers, no overhead) without building the whole requests dict."""
    spec = pod.spec
    if spec.initContainers or spec.overhead:
        return pod_requests(pod).get(resource, 0.0)
    total = 0.0
    for c in spec.containers:
        v = c.resources.requests.get(resource)
        if v is None:
            v = c.resources.limits.get(resource)
        if v is not None:
            try:
                total += parse_quantity(v)
            except ValueError:
                pass
    return total


def sum_requests(pods) -> dict[str, float]:
    total: dict[str, float] = defaultdict(float)
    for p in pods:
        for k, v in pod_requests(p).items():
            total[k] += v
    return dict(total)


def is_extended(resource: str) -> bool:
    """Device-style resources: ``domain/name`` outside kubernetes.io (GPUs, RDMA, FPGAs)."""
    return "/" in resource and not resource.startswith(("kubernetes.io/", "requests.", "limits."))

