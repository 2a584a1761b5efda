"""What one key analytics run produces: frozen records, shared by service, store and API."""

from collections.abc import Mapping
from dataclasses import dataclass, field

from svc_monitor.key_analytics.shards import nodes_in

# The cursor columns of a cluster run whose shards stopped at different cursors (each is
# kept in the cursor table; a run row has room for one).
CURSORS_PER_SHARD = "per-shard"


# Size buckets: powers of two from 64 B to 1 MiB, then everything larger. MEMORY USAGE
# of the smallest key (a short string) is ~50-60 bytes, so 64 B is the first useful bound.
BUCKET_BOUNDS: tuple[int, ...] = tuple(2**p for p in range(6, 21))
OVER_LAST = "+Inf"


def bucket_labels() -> tuple[str, ...]:
    return (*(str(b) for b in BUCKET_BOUNDS), OVER_LAST)


@dataclass(frozen=True, slots=True)
class KeySample:
    """One sampled key: TYPE, PTTL, MEMORY USAGE and (LFU policies only) OBJECT FREQ."""

    key: bytes
    type: str
    ttl_ms: int | None  # None: no expiry
    memory_bytes: int  # 0 when the key went away between SCAN and MEMORY USAGE
    freq: int | None = None


@dataclass(frozen=True, slots=True)
class PatternStats:
    """One key pattern of a run; counts and memory scaled from the sample to the keyspace."""

    pattern: str
    key_count: int  # estimated keys of the pattern in the keyspace
    sampled_key_count: int
    keys_with_ttl: int  # of the sampled keys
    total_memory_bytes: int  # estimated, for the whole keyspace
    sampled_memory_bytes: int
    avg_memory_bytes: float
    max_memory_bytes: int
    avg_ttl_seconds: float | None  # over the sampled keys that have one
    types: Mapping[str, int] = field(default_factory=dict)  # sampled keys by type


@dataclass(frozen=True, slots=True)
class SizeBucket:
    """Keys of one type whose MEMORY USAGE is at most `bucket` bytes (and above the bound
    before it): sampled, and scaled to the keyspace."""

    type: str
    bucket: str  # upper bound in bytes, or "+Inf"
    sampled_keys: int
    keys: int


@dataclass(frozen=True, slots=True)
class RankedKey:
    """A key among a run's largest (by memory) or hottest (by LFU frequency)."""

    key: str  # decoded for display; undecodable bytes as \\x escapes
    type: str
    memory_bytes: int
    ttl_ms: int | None
    freq: int | None = None
    cardinality: int | None = None  # elements (STRLEN for strings); None for other types


@dataclass(frozen=True, slots=True)
class Snapshot:
    """One run of key analytics on one connection (for a cluster, over all its shards)."""

    connection_id: str
    captured_at: int  # epoch ms, when the run ended
    source: str  # host:port the keys were read from; a cluster's nodes, ", "-separated
    on_replica: bool  # for a cluster: every shard was read on a replica
    started_cursor: str  # for a cluster: "0" when every shard's was 0, else CURSORS_PER_SHARD
    next_cursor: str
    sampled_keys: int
    keyspace_keys: int  # DBSIZE of the source; for a cluster, the sum over the shards read
    duration_ms: int
    paused_ms: int  # of the duration, spent pacing
    complete: bool  # the sample size was reached or the whole keyspace was read
    eviction_policy: str | None
    hot_keys_note: str | None  # why there are no hot keys; None when there are
    patterns: tuple[PatternStats, ...] = ()
    size_buckets: tuple[SizeBucket, ...] = ()
    hot_keys: tuple[RankedKey, ...] = ()
    largest_keys: tuple[RankedKey, ...] = ()

    @property
    def nodes_read(self) -> int:
        """Servers the keys were read from: 1, or the cluster shards read (shards.py)."""
        return nodes_in(self.source)
