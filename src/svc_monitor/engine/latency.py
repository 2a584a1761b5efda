"""Parse LATENCY LATEST / HISTORY / HISTOGRAM replies (RESP2, bytes): pure functions, no I/O.

Replies come from a server we do not control, so malformed items are skipped, never raised on.
Valkey 8+ adds two fields to each LATENCY LATEST item (sum and count of the spikes, e.g.
`[b"command", 1795317942, 20, 20, 20, 1]`); Redis 6.2/7.0 send four. Only the first four are
kept, so both read the same.
"""

from dataclasses import dataclass
from typing import Any

from svc_monitor.engine.reply_values import integer, pairs, text


@dataclass(frozen=True, slots=True)
class LatencyEvent:
    """One monitored event of LATENCY LATEST."""

    name: str
    latest_at_s: int  # unix seconds of the latest spike
    latest_ms: int
    max_ms: int


@dataclass(frozen=True, slots=True)
class CommandHistogram:
    """One command of LATENCY HISTOGRAM: its calls, and per bucket (key: upper bound in usec)
    the calls at or under it; the engine's counts are cumulative."""

    calls: int
    histogram: dict[str, int]

    def bounds(self) -> dict[int, int]:
        """The buckets by their upper bound in µs; an item that is not a bound is skipped,
        like any malformed item of the reply."""
        return {int(b): n for b, n in self.histogram.items() if b.isascii() and b.isdigit()}

    def at_or_under(self, bound: int) -> int:
        """The calls at or under `bound`. The engine sends only the buckets that hold
        calls, so a bound it lacks counts what its nearest lower bound counts."""
        return max((n for b, n in self.bounds().items() if b <= bound), default=0)


def parse_latency_latest(reply: Any) -> list[LatencyEvent]:
    events: list[LatencyEvent] = []
    for item in reply if isinstance(reply, list) else []:
        if not isinstance(item, list) or len(item) < 4:
            continue
        numbers = [integer(v) for v in item[1:4]]
        if any(n is None for n in numbers):
            continue
        at, latest, most = (n for n in numbers if n is not None)
        events.append(LatencyEvent(text(item[0]), at, latest, most))
    return events


def parse_latency_history(reply: Any) -> list[tuple[int, int]]:
    """LATENCY HISTORY as (unix seconds, latency ms) pairs, oldest first as the server sends."""
    points: list[tuple[int, int]] = []
    for item in reply if isinstance(reply, list) else []:
        if isinstance(item, list) and len(item) >= 2:
            at, latency = integer(item[0]), integer(item[1])
            if at is not None and latency is not None:
                points.append((at, latency))
    return points


def parse_latency_histogram(reply: Any) -> dict[str, CommandHistogram]:
    """LATENCY HISTOGRAM (Redis 7+, Valkey): `[cmd, [calls, n, histogram_usec, [b, c ...]] ...]`."""
    result: dict[str, CommandHistogram] = {}
    for command, details in pairs(reply):
        fields = dict(pairs(details))
        calls = integer(fields.get("calls"))
        if calls is None:
            continue
        buckets: dict[str, int] = {}
        for bucket, count in pairs(fields.get("histogram_usec")):
            number = integer(count)
            if number is not None:
                buckets[bucket] = number
        result[command] = CommandHistogram(calls=calls, histogram=buckets)
    return result


def merge_histograms(readings: list[dict[str, CommandHistogram]]) -> dict[str, CommandHistogram]:
    """Several nodes' LATENCY HISTOGRAM as one: calls and each bucket's cumulative count
    summed per command (CommandHistogram.at_or_under for a bound a node lacks)."""
    if len(readings) == 1:
        return readings[0]
    merged: dict[str, CommandHistogram] = {}
    for command in sorted({c for reading in readings for c in reading}):
        parts = [reading[command] for reading in readings if command in reading]
        bounds = sorted({b for part in parts for b in part.bounds()})
        merged[command] = CommandHistogram(
            calls=sum(part.calls for part in parts),
            histogram={str(b): sum(part.at_or_under(b) for part in parts) for b in bounds},
        )
    return merged
