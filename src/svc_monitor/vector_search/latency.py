"""Search latency figures from their two sources: pure functions, no I/O
(docs/features/vector-search.md#search-latency).

- The server's per-command histogram (`LATENCY HISTOGRAM FT.SEARCH FT.AGGREGATE`, Redis 7+
  and Valkey) counts every call, in buckets whose upper bounds double. A window's figures
  are the difference between its newest reading and its oldest, and each percentile is the
  upper bound of the bucket it falls in: what the server's own buckets say, no finer. The
  histogram is per command, not per index.
- Stored slow-log entries (SLOWLOG; on Valkey 8.1+ COMMANDLOG's `slow` log, the same
  entries) name the index, so they give figures per index, bucketed `FT.SEARCH:<index>`,
  `FT.AGGREGATE:<index>`, `read` and `write`; but the server logs only the calls slower
  than its threshold, so these describe the slow tail, not every call. Percentiles are
  nearest-rank over the entries' durations.
"""

import math
from collections.abc import Iterable, Sequence

from svc_monitor.engine.latency import CommandHistogram
from svc_monitor.vector_search.models import (
    READ_COMMANDS,
    SEARCH_COMMANDS,
    WRITE_COMMANDS,
    Percentiles,
)


def bucket_of(command: str, index: str | None) -> str | None:
    """The slow-log bucket of one entry; None for commands outside the three kinds."""
    name = command.upper()
    if name in SEARCH_COMMANDS:
        return f"{name}:{index}" if index else None
    if name in READ_COMMANDS:
        return "read"
    if name in WRITE_COMMANDS:
        return "write"
    return None


def index_of(bucket: str) -> str | None:
    """`FT.SEARCH:docs` -> `docs`; None for `read` and `write`."""
    command, colon, index = bucket.partition(":")
    return index if colon and command in SEARCH_COMMANDS else None


def nearest_rank(values: Sequence[int]) -> Percentiles | None:
    """Percentiles of durations by nearest rank: the p-th is the smallest value with at
    least p % of the values at or under it."""
    if not values:
        return None
    ordered = sorted(values)
    n = len(ordered)

    def at(q: float) -> int:
        return ordered[max(math.ceil(q * n), 1) - 1]

    return Percentiles(count=n, p50_us=at(0.50), p95_us=at(0.95), p99_us=at(0.99))


def slow_buckets(entries: Iterable[tuple[str, str | None, int]]) -> dict[str, Percentiles]:
    """(command, first argument, duration in µs) of each stored entry -> figures by bucket."""
    durations: dict[str, list[int]] = {}
    for command, first_arg, duration in entries:
        bucket = bucket_of(command, first_arg)
        if bucket is not None:
            durations.setdefault(bucket, []).append(duration)
    found = {name: nearest_rank(values) for name, values in sorted(durations.items())}
    return {name: p for name, p in found.items() if p is not None}


def histogram_window(
    oldest: CommandHistogram | None, newest: CommandHistogram
) -> Percentiles | None:
    """The calls between two cumulative readings of one command, as percentiles of its
    buckets. Where the server has reset its counters since the older reading (a restart,
    CONFIG RESETSTAT: a count went down), the newest reading stands alone: the calls since
    the reset, all within the window. None when no call fell in between."""
    before = oldest.bounds() if oldest is not None else {}
    if any(newest.at_or_under(bound) < count for bound, count in before.items()):
        oldest, before = None, {}
    bounds = sorted(set(newest.bounds()) | set(before))
    cumulative = [
        newest.at_or_under(b) - (oldest.at_or_under(b) if oldest is not None else 0) for b in bounds
    ]
    total = cumulative[-1] if cumulative else 0
    if total <= 0:
        return None

    def at(q: float) -> int:
        rank = max(math.ceil(q * total), 1)
        return next(b for b, c in zip(bounds, cumulative, strict=True) if c >= rank)

    return Percentiles(count=total, p50_us=at(0.50), p95_us=at(0.95), p99_us=at(0.99))
