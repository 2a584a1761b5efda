"""What the vector index poll finds (vector_search/): documents an index failed to index,
a backfill that does not finish, and an index's searches over or back under its SLA.

All are named by us (docs/features/vector-search.md#events). The service keeps their
hysteresis: each fires once per finding (vector_search/sla.py for the SLA's).
"""

from dataclasses import dataclass
from typing import Any

from svc_monitor.event_types.base import Data, EventType, clip, event_type, fields_of
from svc_monitor.events import InstanceEvent


@dataclass(frozen=True, slots=True, kw_only=True)
class VectorIndexingFailed(InstanceEvent):
    """An index's indexing failures rose between two vector index polls."""

    index_name: str
    new_failures: int
    total_failures: int
    last_error: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class VectorBackfillStalled(InstanceEvent):
    """An index has stayed below 100 % indexed for `below_for_ms`."""

    index_name: str
    percent_indexed: float
    below_for_ms: int
    alert_after_ms: int


def _indexing_failed(e: VectorIndexingFailed) -> Data:
    """documents failed to index in a search index since the previous vector index poll

    Named by us; fires once each time a search index's indexing failures
    (`hash_indexing_failures`) rise between two vector index polls, and for the failures of
    an index created while its server was watched; never for failures there before the
    server was first polled: `{indexName, newFailures, totalFailures, lastError,
    message, timestamp}`."""
    why = f": {clip(e.last_error)}" if e.last_error else ""
    return fields_of(
        e,
        "index_name",
        "new_failures",
        "total_failures",
        lastError=clip(e.last_error) if e.last_error else None,
        message=f"{e.new_failures} document(s) failed to index in {e.index_name}{why}",
        timestamp=e.at_ms,
    )


VECTOR_INDEXING_FAILED = event_type(
    _indexing_failed,
    name="vector_index.indexing_failed",
    order=175,
    tier="community",
    example=VectorIndexingFailed(
        connection_id="c1",
        index_name="docs_idx",
        new_failures=2,
        total_failures=2,
        last_error="Could not add vector with blob size 3 (expected size 32)",
    ),
)


def _backfill_stalled(e: VectorBackfillStalled) -> Data:
    """a search index stayed below 100 % indexed for `VECTOR_BACKFILL_ALERT_MS` (10 min)

    Named by us; fires once when a search index has been below 100 % indexed for
    `VECTOR_BACKFILL_ALERT_MS` (10 minutes by default), and again only after it has
    reached 100 %: `{indexName, percentIndexed, belowForMs, alertAfterMs, message,
    timestamp}`. Searches meanwhile miss the documents not yet indexed."""
    minutes = e.below_for_ms / 60_000
    return fields_of(
        e,
        "index_name",
        "percent_indexed",
        "below_for_ms",
        "alert_after_ms",
        message=(
            f"{e.index_name} is {e.percent_indexed:g} % indexed after {minutes:.1f} min: "
            "searches miss the documents not yet indexed"
        ),
        timestamp=e.at_ms,
    )


VECTOR_BACKFILL_STALLED = event_type(
    _backfill_stalled,
    name="vector_index.backfill_stalled",
    order=176,
    tier="community",
    example=VectorBackfillStalled(
        connection_id="c1",
        index_name="docs_idx",
        percent_indexed=42.5,
        below_for_ms=600_000,
        alert_after_ms=600_000,
    ),
)


@dataclass(frozen=True, slots=True, kw_only=True)
class VectorSlaBreached(InstanceEvent):
    """An index's search p99 went over its SLA threshold."""

    index_name: str
    p99_us: int
    threshold_us: int
    source: str  # "histogram" or "slowlog"
    window_ms: int
    while_backfilling: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class VectorSlaRecovered(InstanceEvent):
    """An index's search p99 stayed back under its SLA for the debounce period."""

    index_name: str
    p99_us: int | None
    threshold_us: int
    breached_for_ms: int


def _sla_breached(e: VectorSlaBreached) -> Data:
    """a search index's p99 went over its SLA threshold

    Named by us; fires when the p99 of an index's searches over the latency window
    (`SEARCH_LATENCY_WINDOW_MS`, 15 min) goes over its threshold (`searchSlaP99Us`, or the
    index's own in `searchSlaByIndex`), at most once per `SEARCH_SLA_DEBOUNCE_MS` (10 min):
    `{indexName, p99Us, thresholdUs, source, windowMs, whileBackfilling, message,
    timestamp}`. `source` says which figure was judged: `histogram` (every call; only
    where the index is its server's one index) or `slowlog` (the slow tail);
    `whileBackfilling` marks a rise while the index was still below 100 % indexed."""
    backfilling = " while it is backfilling" if e.while_backfilling else ""
    return fields_of(
        e,
        "index_name",
        "p99_us",
        "threshold_us",
        "source",
        "window_ms",
        "while_backfilling",
        message=(
            f"searches on {e.index_name} have a p99 of {e.p99_us / 1000:g} ms{backfilling}, "
            f"over the {e.threshold_us / 1000:g} ms SLA"
        ),
        timestamp=e.at_ms,
    )


VECTOR_SLA_BREACHED = event_type(
    _sla_breached,
    name="vector_index.sla_breached",
    order=177,
    tier="pro",
    example=VectorSlaBreached(
        connection_id="c1",
        index_name="docs_idx",
        p99_us=131_072,
        threshold_us=50_000,
        source="slowlog",
        window_ms=900_000,
        while_backfilling=False,
    ),
)


def _sla_recovered(e: VectorSlaRecovered) -> Data:
    """a search index's p99 came back under its SLA threshold

    Named by us; fires once the p99 of an index whose `vector_index.sla_breached` was sent
    has stayed at or under 90 % of its threshold for `SEARCH_SLA_DEBOUNCE_MS` (10 min):
    `{indexName, p99Us, thresholdUs, breachedForMs, message, timestamp}`; `p99Us` is null
    when no search was slow enough to be counted."""
    now = "no slow searches" if e.p99_us is None else f"a p99 of {e.p99_us / 1000:g} ms"
    return fields_of(
        e,
        "index_name",
        "p99_us",
        "threshold_us",
        "breached_for_ms",
        message=(
            f"searches on {e.index_name} are back under the {e.threshold_us / 1000:g} ms SLA "
            f"({now}) after {e.breached_for_ms / 60_000:.1f} min"
        ),
        timestamp=e.at_ms,
    )


VECTOR_SLA_RECOVERED = event_type(
    _sla_recovered,
    name="vector_index.sla_recovered",
    order=178,
    tier="pro",
    example=VectorSlaRecovered(
        connection_id="c1",
        index_name="docs_idx",
        p99_us=8_192,
        threshold_us=50_000,
        breached_for_ms=1_200_000,
    ),
)


EVENT_TYPES: tuple[EventType[Any], ...] = (
    VECTOR_INDEXING_FAILED,
    VECTOR_BACKFILL_STALLED,
    VECTOR_SLA_BREACHED,
    VECTOR_SLA_RECOVERED,
)
