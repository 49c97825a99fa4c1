"""The Prometheus families of `gpuctl serve` (names, labels and meaning: docs/serve.md),
written with prometheus-client's exposition. Built from the last ``State`` and the
watch cache's informer statistics at scrape time: a scrape reads memory only."""

from __future__ import annotations

import time
from typing import Any, Callable, Iterable, Optional

from .. import __version__
from .state import State, node_findings

DURATION_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
CAPACITY_STATES = ("capacity", "allocatable", "allocated", "free", "unhealthy")


class Health:
    """The exporter's own counters, updated by the recompute loop."""

    def __init__(self) -> None:
        self.durations: list[float] = []
        self.bucket_counts = [0] * (len(DURATION_BUCKETS) + 1)
        self.duration_sum = 0.0
        self.passes = 0
        self.last_pass = 0.0     # wall time of the last completed recompute
        self.failures = 0

    def observe(self, seconds: float) -> None:
        self.passes += 1
        self.duration_sum += seconds
        for i, b in enumerate(DURATION_BUCKETS):
            if seconds <= b:
                self.bucket_counts[i] += 1
                break
        else:
            self.bucket_counts[-1] += 1
        self.last_pass = time.time()


class Exporter:
    """A prometheus-client collector over the latest state (``state()``), the informers'
    statistics (``informers()``) and the loop's ``Health``."""

    def __init__(self, state: Callable[[], Optional[State]], informers: Callable[[], list[Any]], health: Health):
        self.state, self.informers, self.health = state, informers, health

    def describe(self) -> list:
        return []   # unchecked collector: families are known only at scrape time

    def collect(self) -> Iterable[Any]:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily

        st = self.state()
        pending = GaugeMetricFamily("gpuctl_pending_pods", "Pending GPU pods by ranked root cause (finding code)",
                                    labels=["code", "namespace", "resource", "severity"])
        oldest = GaugeMetricFamily("gpuctl_pending_oldest_seconds", "Age of the oldest Pending GPU pod per root cause",
                                   labels=["code"])
        gpus = GaugeMetricFamily("gpuctl_gpus", "GPUs per pool and resource, by state", labels=["pool", "resource", "state"])
        stranded = GaugeMetricFamily("gpuctl_gpus_stranded", "Free GPUs no Pending pod of the pool can use",
                                     labels=["pool", "resource"])
        block = GaugeMetricFamily("gpuctl_gpus_largest_free_block", "Most GPUs free on one schedulable node of the pool",
                                  labels=["pool", "resource"])
        nodes = GaugeMetricFamily("gpuctl_node_findings", "Findings of GPU nodes' own diagnoses",
                                  labels=["node", "code", "severity"])
        if st is not None:
            for (code, ns, resource, severity), n in sorted(st.pending_counts.items()):
                pending.add_metric([code, ns, resource, severity], n)
            for code, seconds in sorted(st.oldest.items()):
                oldest.add_metric([code], seconds)
            for pool in st.capacity.get("pools", []):
                labels = [str(pool.get("pool") or ""), str(pool.get("resource") or "")]
                for state in CAPACITY_STATES:
                    gpus.add_metric(labels + [state], float(pool.get(state) or 0))
                frag = pool.get("fragmentation") or {}
                stranded.add_metric(labels, float(frag.get("stranded") or 0))
                block.add_metric(labels, float(frag.get("largest_free_block") or 0))
            for node, code, severity in node_findings(st):
                nodes.add_metric([node, code, severity], 1)
        yield from (pending, oldest, gpus, stranded, block, nodes)

        synced = GaugeMetricFamily("gpuctl_cache_synced", "1 once the resource's watch cache has listed and watches",
                                   labels=["resource"])
        restarts = CounterMetricFamily("gpuctl_watch_restarts", "Watches that ended and were re-opened", labels=["resource"])
        relists = CounterMetricFamily("gpuctl_relists", "Full re-lists (410 Gone)", labels=["resource"])
        age = GaugeMetricFamily("gpuctl_last_event_age_seconds", "Seconds since the resource's last watch event or bookmark",
                                labels=["resource"])
        errors = CounterMetricFamily("gpuctl_api_errors", "API errors by HTTP status (0: network)", labels=["code"])
        now = time.monotonic()
        per_resource: dict[str, list[Any]] = {}
        for inf in self.informers():
            if not inf.stats.absent:   # an API version or CRD the cluster does not serve
                per_resource.setdefault(inf.stats.resource, []).append(inf.stats)
        error_counts: dict[str, int] = {}
        for resource, stats in sorted(per_resource.items()):
            synced.add_metric([resource], 1.0 if all(s.synced for s in stats) else 0.0)
            restarts.add_metric([resource], sum(s.restarts for s in stats))
            relists.add_metric([resource], sum(s.relists for s in stats))
            last = max((s.last_event for s in stats), default=0.0)
            age.add_metric([resource], max(0.0, now - last) if last else float("nan"))
            for s in stats:
                for code, n in s.errors.items():
                    error_counts[code] = error_counts.get(code, 0) + n
        for code, n in sorted(error_counts.items()):
            errors.add_metric([code], n)
        yield from (synced, restarts, relists, age, errors)

        h = self.health
        buckets, total = [], 0
        for b, n in zip([*map(str, DURATION_BUCKETS), "+Inf"], h.bucket_counts):
            total += n
            buckets.append((b, total))
        yield HistogramMetricFamily("gpuctl_diagnosis_duration_seconds", "Seconds one recompute of the diagnosis took",
                                    buckets=buckets, sum_value=h.duration_sum)
        staleness = GaugeMetricFamily("gpuctl_diagnosis_age_seconds",
                                      "Seconds since the last completed recompute (how stale every other metric is)")
        staleness.add_metric([], time.time() - h.last_pass if h.last_pass else float("nan"))
        yield staleness
        info = GaugeMetricFamily("gpuctl_build_info", "gpuctl's version", labels=["version"])
        info.add_metric([__version__], 1)
        yield info


def exposition(exporter: Exporter) -> bytes:
    """The text exposition format (version 0.0.4) of one scrape."""
    from prometheus_client import CollectorRegistry, generate_latest

    registry = CollectorRegistry(auto_describe=False)
    registry.register(exporter)
    return generate_latest(registry)
