"""`gpuctl serve` under API faults (issue 15: the fault matrix gains serve). For each
list the exporter's cache reads and each fault, persistent: the loop survives, a
scrape still answers, the fault is visible in the exporter's own metrics (API errors,
a resource not synced, a stale diagnosis) and never a silent freeze; when the fault
clears, the cache recovers. Through the real client against the local API server."""

from __future__ import annotations

import math
import time

import pytest

from gpuctl.collect import watch as W
from gpuctl.collect.files import resolve_snapshot
from gpuctl.collect.kube import KubeAPI
from gpuctl.serve.metrics import exposition
from gpuctl.serve.server import Service

from support.kubeapi import Fault

ENDPOINTS = {
    "nodes": r"^/api/v1/nodes$",
    "pods": r"^/api/v1/pods$",
    "events": r"^/api/v1/events$",
    "resourcequotas": r"^/api/v1/resourcequotas$",
}
FAULTS = {
    "500": dict(kind="status", status=500),
    "403": dict(kind="status", status=403),
    "reset": dict(kind="reset"),
    "badjson": dict(kind="badjson"),
    "hang": dict(kind="hang", delay=3.0),
}


def _families(svc: Service) -> dict:
    from prometheus_client.parser import text_string_to_metric_families

    return {f.name: f for f in text_string_to_metric_families(exposition(svc.exporter).decode())}


def _wait(pred, seconds: float) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.1)
    return pred()


@pytest.fixture(autouse=True)
def quick_backoff(monkeypatch):
    monkeypatch.setattr(W, "BACKOFF_MAX", 0.5)
    monkeypatch.setattr(W, "FORBIDDEN_RETRY", 0.5)


# Every fault on the two lists everything depends on; the quick faults on the others
# (a hang there costs each of their informers its timeouts, the same path as nodes').
CELLS = [(r, f) for r in ("nodes", "pods") for f in sorted(FAULTS)] + \
        [(r, f) for r in ("events", "resourcequotas") for f in ("403", "500", "badjson")]


@pytest.mark.parametrize("resource,fault", CELLS)
def test_a_persistent_fault_is_exported_never_a_crash_or_a_silent_freeze(serve, resource, fault):
    srv, kubeconfig = serve(resolve_snapshot("demo"))
    srv.add_fault(Fault(ENDPOINTS[resource], times=None, **FAULTS[fault]))
    svc = Service(KubeAPI(kubeconfig, "incident", request_timeout=2.0), interval=1.0, watch_seconds=2)
    svc.cache.sync_timeout = 10.0
    svc.start()
    try:
        assert _wait(lambda: svc.health.passes + svc.health.failures >= 1, 60), "the loop never finished a pass"
        fams = _families(svc)          # a scrape answers, whatever the fault
        errors = sum(s.value for s in fams["gpuctl_api_errors"].samples) if "gpuctl_api_errors" in fams else 0
        synced = {s.labels["resource"]: s.value for s in fams["gpuctl_cache_synced"].samples}
        age = fams["gpuctl_diagnosis_age_seconds"].samples[0].value
        # the fault shows: an API error counted, the resource not synced, or no diagnosis (NaN age)
        visible = errors > 0 or synced.get(resource, 1.0) == 0.0 or math.isnan(age)
        assert visible, f"{resource}/{fault}: errors={errors} synced={synced} age={age}"
        if svc.state is not None:      # a diagnosis made despite the fault says what it could not read
            assert svc.state.pending["schema"] == "gpuctl/pending/v1"
        # the fault clears: the cache recovers and a pass completes with every resource synced
        srv.clear_faults()
        assert _wait(lambda: svc.cache.synced() and all(i.stats.synced or i.stats.absent for i in svc.cache.informers.values()), 30), \
            [(k, i.stats.gap) for k, i in svc.cache.informers.items() if not (i.stats.synced or i.stats.absent)]
        passes = svc.health.passes
        assert _wait(lambda: svc.health.passes > passes, 30)
        assert svc.ready()
    finally:
        svc.stop()
