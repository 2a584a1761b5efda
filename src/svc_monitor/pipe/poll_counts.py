"""How many passes each poll kind made per connection, and how long they took: the
`svc_polls_total` and `svc_poll_duration_seconds` families. Kept in memory only."""

from bisect import bisect_left
from dataclasses import dataclass, field

# Seconds; a pass is bounded by its deadline, so the top bucket catches the slow ones.
DURATION_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


@dataclass(slots=True)
class DurationHistogram:
    """Cumulative-at-read buckets of pass durations for one poll kind."""

    counts: list[int] = field(default_factory=lambda: [0] * (len(DURATION_BUCKETS) + 1))
    total_s: float = 0.0

    def observe(self, seconds: float) -> None:
        self.counts[bisect_left(DURATION_BUCKETS, seconds)] += 1
        self.total_s += seconds

    @property
    def count(self) -> int:
        return sum(self.counts)


class PollCounts:
    """Passes by (connection, kind) and outcome; durations by kind (a per-connection
    histogram would multiply the series by the number of buckets)."""

    def __init__(self) -> None:
        self.passes: dict[tuple[str, str, bool], int] = {}  # (connection, kind, ok) -> n
        self.durations: dict[str, DurationHistogram] = {}
        # Passes that started over a tenth of their interval after they were due, by kind:
        # how an operator (and bench/poll_fanout.py) tells the poller has fallen behind.
        self.late: dict[str, int] = {}
        # INFO fields left out because their number no counter holds (engine/info.py
        # `rejected`), summed over every observation, by connection.
        self.rejected: dict[str, int] = {}
        # The keys of `passes` by connection: forgetting one of a thousand connections
        # must not scan every key (a shutdown forgets them all).
        self._keys_of: dict[str, set[tuple[str, str, bool]]] = {}

    def record(self, connection_id: str, kind: str, *, seconds: float, ok: bool) -> None:
        key = (connection_id, kind, ok)
        count = self.passes.get(key)
        if count is None:
            self._keys_of.setdefault(connection_id, set()).add(key)
            count = 0
        self.passes[key] = count + 1
        histogram = self.durations.get(kind)
        if histogram is None:
            histogram = self.durations[kind] = DurationHistogram()
        histogram.observe(seconds)

    def record_late(self, kind: str) -> None:
        self.late[kind] = self.late.get(kind, 0) + 1

    def record_rejected(self, connection_id: str, count: int) -> None:
        self.rejected[connection_id] = self.rejected.get(connection_id, 0) + count

    def forget(self, connection_id: str) -> None:
        self.rejected.pop(connection_id, None)
        for key in self._keys_of.pop(connection_id, ()):
            self.passes.pop(key, None)
