"""Plain values of the vector search domain: what one latency pass read, and the figures
worked out of it (docs/features/vector-search.md#search-latency)."""

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

from svc_monitor.engine.latency import CommandHistogram

Source = Literal["histogram", "slowlog"]

SEARCH_COMMANDS = ("FT.SEARCH", "FT.AGGREGATE")
# The reads and writes a retrieval or semantic-cache workload runs beside its searches:
# documents and cached answers are hashes, strings or JSON.
READ_COMMANDS = frozenset({"GET", "MGET", "HGET", "HMGET", "HGETALL", "JSON.GET", "JSON.MGET"})
WRITE_COMMANDS = frozenset({"SET", "HSET", "HMSET", "HSETNX", "JSON.SET"})
# What the latency pass reads of the stored slow log.
LOGGED_COMMANDS = frozenset(SEARCH_COMMANDS) | READ_COMMANDS | WRITE_COMMANDS


@dataclass(frozen=True, slots=True)
class Percentiles:
    """p50/p95/p99 in microseconds over `count` calls."""

    count: int
    p50_us: int
    p95_us: int
    p99_us: int


@dataclass(frozen=True, slots=True)
class LatencyReading:
    """One pass's latency inputs for one connection."""

    captured_at: int
    # LATENCY HISTOGRAM of the search commands; None where the engine has none or refused.
    histograms: dict[str, CommandHistogram] | None
    # (command, first argument, µs) of the stored slow-log entries within the window.
    slow_entries: list[tuple[str, str | None, int]]
    slow_log_threshold_us: int | None
    slow_log_name: Literal["slowlog", "commandlog"]


@dataclass(frozen=True, slots=True)
class LatencyBucket:
    """Figures of one bucket: a search command over every call (`histogram`), or one
    index's searches, the reads or the writes in the slow tail (`slowlog`)."""

    bucket: str
    source: Source
    index: str | None  # the index the figures are of; None for read, write, or several
    figures: Percentiles
    unhealthy: bool | None  # None where the source cannot tell (see the docs)
    backfilling: bool


@dataclass(frozen=True, slots=True)
class SlaStatus:
    """One index's search SLA as last judged."""

    index: str
    threshold_us: int
    p99_us: int | None
    source: Source
    breached: bool
    since: int | None
    backfilling: bool


@dataclass(frozen=True, slots=True)
class SearchLatency:
    """The newest search latency figures of one connection."""

    captured_at: int
    window_ms: int
    # How much time the histogram's figures cover: 0 at the first reading, a baseline only.
    histogram_covers_ms: int | None
    histogram_available: bool
    slow_log_name: Literal["slowlog", "commandlog"]
    slow_log_threshold_us: int | None
    slow_entries: int
    buckets: tuple[LatencyBucket, ...]
    # None where the licence does not include the search SLA; empty with no index.
    slas: tuple[SlaStatus, ...] | None


# Stored slow-log entries for the trend: (connection id, from ms, to ms or None, commands,
# at most) -> (start ms, command, first argument, µs), newest first. The slow-log domain's,
# handed over by the composition (vector_search/part.py).
TimedEntries = Callable[
    [str, int, int | None, frozenset[str], int], Awaitable[list[tuple[int, str, str | None, int]]]
]
