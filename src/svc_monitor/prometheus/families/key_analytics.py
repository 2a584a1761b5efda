"""Key analytics families at scrape time, from the newest run of each polled connection
(KeyAnalyticsService.latest; never storage, never the server, during a scrape).

- svc_key_pattern_keys / _memory_bytes / _avg_memory_bytes / _max_memory_bytes
  {pattern}: per pattern, scaled to the keyspace (full profile: per-pattern series).
- svc_key_memory_bytes and svc_key_cardinality {key, type}: the run's 20 largest keys
  (full profile: key names as labels).
- svc_keysize_bucket_keys {type, bucket}: keys per MEMORY USAGE bucket, scaled.

A connection without a run in this process has no series: absent, never zero.
"""

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from svc_monitor.key_analytics.models import PatternStats
from svc_monitor.key_analytics.service import KeyAnalyticsService
from svc_monitor.prometheus import catalogue

if TYPE_CHECKING:
    from prometheus_client.core import GaugeMetricFamily
    from prometheus_client.metrics_core import Metric


class KeyAnalyticsCollector:
    """A prometheus_client collector over KeyAnalyticsService.latest."""

    def __init__(
        self,
        analytics: KeyAnalyticsService,
        addresses: Callable[[], dict[str, str]],
        *,
        full: Callable[[], bool],
    ) -> None:
        self._analytics = analytics
        self._addresses = addresses  # connection id -> host:port, of the polled ones
        self._full = full

    def collect(self) -> Iterator["Metric"]:
        latest = self._analytics.latest
        if not latest:
            return
        addresses = self._addresses()
        runs = [(addresses[c], s) for c, s in sorted(latest.items()) if c in addresses]
        buckets = _family(catalogue.KEYSIZE_BUCKET_KEYS)
        for address, s in runs:
            for b in s.size_buckets:
                buckets.add_metric([address, b.type, b.bucket], b.keys)
        if buckets.samples:
            yield buckets
        if not self._full():
            return
        for family_of, value in _PATTERN_FAMILIES:
            family = _family(family_of)
            for address, s in runs:
                for p in s.patterns:
                    family.add_metric([address, p.pattern], value(p))
            if family.samples:
                yield family
        memory, cardinality = _family(catalogue.KEY_MEMORY), _family(catalogue.KEY_CARDINALITY)
        for address, s in runs:
            for k in s.largest_keys:
                memory.add_metric([address, k.key, k.type], k.memory_bytes)
                if k.cardinality is not None:
                    cardinality.add_metric([address, k.key, k.type], k.cardinality)
        yield from (f for f in (memory, cardinality) if f.samples)


_PATTERN_FAMILIES: tuple[tuple[catalogue.Family, Callable[[PatternStats], float]], ...] = (
    (catalogue.KEY_PATTERN_KEYS, lambda p: p.key_count),
    (catalogue.KEY_PATTERN_MEMORY, lambda p: p.total_memory_bytes),
    (catalogue.KEY_PATTERN_AVG_MEMORY, lambda p: p.avg_memory_bytes),
    (catalogue.KEY_PATTERN_MAX_MEMORY, lambda p: p.max_memory_bytes),
)


def _family(family: catalogue.Family) -> "GaugeMetricFamily":
    from prometheus_client.core import GaugeMetricFamily

    return GaugeMetricFamily(family.name, family.help, labels=["connection", *family.labels])
