"""Vector index families at scrape time, from the newest vector index poll of each polled
connection (VectorSearchService.latest; never storage, never the server, during a scrape).

svc_vector_index_docs, _memory_bytes, _indexing_failures and _percent_indexed {index}: one
series per index; a figure the engine does not report has no series (absent, never zero),
and a dropped index's series go with the next poll. A cluster's indexes are labelled with
the node that holds them.

svc_inference_bucket_p50_seconds, _p95_seconds and _p99_seconds (the microsecond figures
in seconds, as promtool asks) and svc_inference_unhealthy {bucket, source}, and
svc_inference_sla_breach {index}: from the newest search latency figures
(VectorSearchService.search_latency).
"""

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from svc_monitor.engine.search_index import SearchIndexInfo
from svc_monitor.prometheus import catalogue
from svc_monitor.vector_search.models import LatencyBucket
from svc_monitor.vector_search.service import VectorSearchService

if TYPE_CHECKING:
    from prometheus_client.core import GaugeMetricFamily
    from prometheus_client.metrics_core import Metric

_FAMILIES: tuple[tuple[catalogue.Family, Callable[[SearchIndexInfo], float | None]], ...] = (
    (catalogue.VECTOR_INDEX_DOCS, lambda i: i.docs),
    (catalogue.VECTOR_INDEX_MEMORY, lambda i: i.memory_bytes),
    (catalogue.VECTOR_INDEX_FAILURES, lambda i: i.indexing_failures),
    (catalogue.VECTOR_INDEX_PERCENT_INDEXED, lambda i: i.percent_indexed),
)

_LATENCY: tuple[tuple[catalogue.Family, Callable[[LatencyBucket], float | None]], ...] = (
    (catalogue.INFERENCE_P50, lambda b: b.figures.p50_us / 1e6),
    (catalogue.INFERENCE_P95, lambda b: b.figures.p95_us / 1e6),
    (catalogue.INFERENCE_P99, lambda b: b.figures.p99_us / 1e6),
    (catalogue.INFERENCE_UNHEALTHY, lambda b: None if b.unhealthy is None else int(b.unhealthy)),
)


class VectorIndexCollector:
    """A prometheus_client collector over VectorSearchService.latest."""

    def __init__(
        self, vector_search: VectorSearchService, addresses: Callable[[], dict[str, str]]
    ) -> None:
        self._vector_search = vector_search
        self._addresses = addresses  # connection id -> host:port, of the polled ones

    def collect(self) -> Iterator["Metric"]:
        latest = self._vector_search.latest
        if not latest:
            return
        addresses = self._addresses()
        polls = [(addresses[c], p) for c, p in sorted(latest.items()) if c in addresses]
        for spec, value_of in _FAMILIES:
            family = _family(spec)
            for address, poll in polls:
                for index in poll.indexes:
                    value = value_of(index)
                    if value is not None:
                        # A cluster's index hangs on the node holding it, as its INFO does.
                        where = index.node or address
                        family.add_metric([where, index.name], float(value))
            if family.samples:
                yield family
        yield from self._latency(addresses)

    def _latency(self, addresses: dict[str, str]) -> Iterator["Metric"]:
        figures = [
            (addresses[c], latency)
            for c, latency in sorted(self._vector_search.search_latency.items())
            if c in addresses
        ]
        if not figures:
            return
        for spec, value_of in _LATENCY:
            family = _family(spec)
            for address, latency in figures:
                for bucket in latency.buckets:
                    value = value_of(bucket)
                    if value is not None:
                        family.add_metric([address, bucket.bucket, bucket.source], float(value))
            if family.samples:
                yield family
        breach = _family(catalogue.INFERENCE_SLA_BREACH)
        for address, latency in figures:
            for sla in latency.slas or ():
                breach.add_metric([address, sla.index], 1.0 if sla.breached else 0.0)
        if breach.samples:
            yield breach


def _family(family: catalogue.Family) -> "GaugeMetricFamily":
    from prometheus_client.core import GaugeMetricFamily

    return GaugeMetricFamily(family.name, family.help, labels=["connection", *family.labels])
