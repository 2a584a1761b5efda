"""Facts: what polls other than INFO hand to the pipe (Pipe.put_facts).

INFO arrives as an Observation; everything else (the slow log's length and patterns, the
command log, ACL denials, client counts, CLUSTER INFO and slot stats, commandstats, the
latency monitor, the config watch's replica buffer limit) is summarised by its poll, or by
the OTLP receiver for pushed commandstats and pushed engine versions, into one of these
small frozen records. Live state keeps the latest of
each kind per connection, replaced whole on every pass, for Prometheus at scrape time
(and the OTLP export that mirrors it): a scrape reads them without a query, so it costs
the same with a busy store as with an idle one. The pipe's other facts consumers
(detectors, commandstats history, anomaly detection, the CVE scanner) take the kinds they
judge.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field

from svc_monitor.engine.cluster import SlotStats
from svc_monitor.engine.info import ParsedInfo
from svc_monitor.engine.latency import LatencyEvent


@dataclass(frozen=True, slots=True)
class PatternCount:
    """Entries of one command pattern (slowlog/command_patterns.py's grouping) in the last read."""

    pattern: str
    count: int
    avg_duration_us: float
    percentage: float  # share of the entries read, 0-100


@dataclass(frozen=True, slots=True)
class SlowlogFacts:
    at_ms: int
    length: int | None  # SLOWLOG LEN; None when the user may not run it
    last_id: int | None  # the newest entry's id; None while the log is empty
    patterns: tuple[PatternCount, ...] = ()  # over the newest entries read (at most 128)


@dataclass(frozen=True, slots=True)
class CommandlogFacts:
    """Valkey 8.1+ COMMANDLOG: entries of each type in the last read, and their patterns."""

    at_ms: int
    large_request: int
    large_reply: int
    large_request_patterns: tuple[PatternCount, ...] = ()
    large_reply_patterns: tuple[PatternCount, ...] = ()


@dataclass(frozen=True, slots=True)
class AclFacts:
    """Denials in the server's ACL LOG as last read (the sum of each entry's count)."""

    at_ms: int
    denied: int
    by_reason: Mapping[str, int] = field(default_factory=dict)
    by_user: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ClientFacts:
    """CLIENT LIST as last read: connections now, the most seen since the service
    started, and the split by client name ("unnamed" for none) and by ACL user."""

    at_ms: int
    current: int
    peak: int
    by_name: Mapping[str, int] = field(default_factory=dict)
    by_user: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ClusterFacts:
    """The seed's CLUSTER INFO, and on Valkey 8.0+ the 100 slots holding most keys."""

    at_ms: int
    info: Mapping[str, int | str]
    top_slots: tuple[SlotStats, ...] = ()


@dataclass(frozen=True, slots=True)
class CommandstatsFacts:
    """The latest INFO commandstats reply, parsed on demand (a scrape reads it, a poll
    nobody scrapes never pays for the per-command split)."""

    at_ms: int
    info: ParsedInfo


@dataclass(frozen=True, slots=True)
class LatencyFacts:
    """LATENCY LATEST as last read: each monitored event's latest spike."""

    at_ms: int
    events: tuple[LatencyEvent, ...]


@dataclass(frozen=True, slots=True)
class ReplicaBufferLimitFacts:
    """The replica class's hard output buffer limit (`client-output-buffer-limit`), as the
    config watch's CONFIG GET last read it: the primary drops a replica whose buffer
    reaches it. 0: no limit."""

    at_ms: int
    hard_limit_bytes: int


@dataclass(frozen=True, slots=True)
class ServerVersionFacts:
    """A push connection's engine and version, as its resource attributes last said
    (a Valkey's 7.2.4 `redis.version` already set aside): put on first arrival, on
    change and every 6 hours, so the CVE scanner scans it then."""

    at_ms: int
    engine: str  # "valkey" or "redis"
    version: str


Facts = (
    SlowlogFacts
    | CommandlogFacts
    | AclFacts
    | ClientFacts
    | ClusterFacts
    | CommandstatsFacts
    | LatencyFacts
    | ReplicaBufferLimitFacts
    | ServerVersionFacts
)
