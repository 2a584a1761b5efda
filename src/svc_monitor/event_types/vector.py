"""What the vector index poll finds (vector_search/): documents an index failed to index,
and a backfill that does not finish.

Both are named by us (docs/features/vector-search.md#events). The service keeps their
hysteresis: each fires once per finding.
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


EVENT_TYPES: tuple[EventType[Any], ...] = (VECTOR_INDEXING_FAILED, VECTOR_BACKFILL_STALLED)
