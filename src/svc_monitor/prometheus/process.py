"""The service's own process families, under the `svc_` prefix.

prometheus_client's process collector gives svc_process_* (CPU, memory, file
descriptors, start time); the user/system CPU split that OTLP's `process.cpu.time`
wants and the garbage collector's counts are ours, read from os.times() and
gc.get_stats() at scrape time. None carries a `connection` label.
"""

import gc
import os
from collections.abc import Iterator

from prometheus_client import ProcessCollector
from prometheus_client.core import CounterMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector


class _CpuSplitCollector(Collector):
    def collect(self) -> Iterator[Metric]:
        times = os.times()
        yield CounterMetricFamily(
            "svc_process_cpu_user_seconds", "User CPU time of this process.", value=times.user
        )
        yield CounterMetricFamily(
            "svc_process_cpu_system_seconds",
            "System CPU time of this process.",
            value=times.system,
        )


class _GcCollector(Collector):
    def collect(self) -> Iterator[Metric]:
        families = {
            "collections": CounterMetricFamily(
                "svc_python_gc_collections",
                "Garbage collector runs, by generation.",
                labels=["generation"],
            ),
            "collected": CounterMetricFamily(
                "svc_python_gc_objects_collected",
                "Objects the garbage collector freed, by generation.",
                labels=["generation"],
            ),
            "uncollectable": CounterMetricFamily(
                "svc_python_gc_objects_uncollectable",
                "Objects the garbage collector found but could not free, by generation.",
                labels=["generation"],
            ),
        }
        for generation, stats in enumerate(gc.get_stats()):
            for key, family in families.items():
                family.add_metric([str(generation)], stats[key])
        yield from families.values()


def own_collectors() -> list[Collector]:
    return [ProcessCollector(namespace="svc", registry=None), _CpuSplitCollector(), _GcCollector()]
