"""The pacing rule for work that reads (or writes) a whole keyspace beside production.

After every round trip (a SCAN, or a pipeline of at most a few dozen keys) the worker
pauses PACE_FACTOR times as long as that round trip took, at least MIN_PAUSE_S and at
most MAX_PAUSE_S. The round trip is the server's observed latency for our work; so the
monitor holds the server at most 1 / (1 + PACE_FACTOR) of the time, and a server that
slows down (longer round trips) is given proportionally more room. Key analytics
(docs/features/key-analytics.md) and migration (docs/features/migration.md) both pace
by it; bench/key_analytics.py and bench/migration.py measure what other clients see.
"""

PACE_FACTOR = 3.0
MIN_PAUSE_S = 0.001
MAX_PAUSE_S = 1.0


def pause_for(round_trip_s: float) -> float:
    """How long to rest after a round trip of `round_trip_s` (module docstring)."""
    return min(max(round_trip_s * PACE_FACTOR, MIN_PAUSE_S), MAX_PAUSE_S)
