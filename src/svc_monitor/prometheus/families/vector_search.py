"""Vector index families at scrape time, from the newest vector index poll of each polled
connection (VectorSearchService.latest; never storage, never the server, during a scrape).

svc_vector_index_docs, _memory_bytes, _indexing_failures and _percent_indexed {index}: one
series per index; a figure the engine does not report has no series (absent, never zero),
and a dropped index's series go with the next poll.
"""

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from svc_monitor.engine.search_index import SearchIndexInfo
from svc_monitor.prometheus import catalogue
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
                        family.add_metric([address, index.name], float(value))
            if family.samples:
                yield family


def _family(family: catalogue.Family) -> "GaugeMetricFamily":
    from prometheus_client.core import GaugeMetricFamily

    return GaugeMetricFamily(family.name, family.help, labels=["connection", *family.labels])
