"""Which INFO sections the INFO poll reads on every pass, and which only on a full read.

Every pass (the anomaly interval, 1 s by default) reads only the sections that something
judges or shows each second; every `fullInfoIntervalMs` (10 s by default) a pass reads the
full default INFO instead, and the passes in between carry the other sections on from it,
marked as carried with the time they were read (engine/info.py CarriedSections). The
cadence of every section is documented in docs/features/polling-and-history.md#info-cadence
and pinned by tests/polling/test_info_cadence.py: a per-second consumer that reads a
section outside EVERY_PASS fails it.
"""

from svc_monitor.engine.info import CarriedSections, ParsedInfo

# What the anomaly detectors, thresholds, the readings behind health and the dashboard's
# live cards, and history read on every pass. About 4.6 KB of a 6.3 KB Valkey 9.1 reply:
# server (version, run id, uptime), persistence, modules, errorstats and cluster are read
# with the full INFO only.
EVERY_PASS: tuple[str, ...] = ("clients", "memory", "stats", "replication", "cpu", "keyspace")
_EVERY_PASS = frozenset(EVERY_PASS)

DEFAULT_FULL_INFO_INTERVAL_MS = 10_000


def carried_from(info: ParsedInfo, at_ms: int) -> CarriedSections:
    """The sections of a full read that the slim reads after it carry on: all but the
    every-pass ones."""
    return CarriedSections(at_ms, info, frozenset(info.sections) - _EVERY_PASS)
