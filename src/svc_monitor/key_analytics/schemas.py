"""Response models of /api/key-analytics/*."""

from pydantic import BaseModel, Field

from svc_monitor.key_analytics.models import PatternStats, RankedKey, SizeBucket, Snapshot


class KeyPatternRead(BaseModel):
    """One key pattern of one run; counts and memory scaled from the sample to DBSIZE."""

    timestamp: int = Field(description="epoch ms of the run")
    pattern: str
    keyCount: int = Field(description="estimated keys of the pattern in the keyspace")
    sampledKeyCount: int
    keysWithTtl: int = Field(description="sampled keys with an expiry")
    ttlShare: float = Field(description="keysWithTtl / sampledKeyCount, 0-1")
    totalMemoryBytes: int = Field(description="estimated, for the whole keyspace")
    sampledMemoryBytes: int
    avgMemoryBytes: float
    maxMemoryBytes: int
    avgTtlSeconds: float | None
    types: dict[str, int] = Field(description="sampled keys by type")

    @classmethod
    def of(cls, timestamp: int, p: PatternStats) -> "KeyPatternRead":
        return cls(
            timestamp=timestamp,
            pattern=p.pattern,
            keyCount=p.key_count,
            sampledKeyCount=p.sampled_key_count,
            keysWithTtl=p.keys_with_ttl,
            ttlShare=p.keys_with_ttl / p.sampled_key_count if p.sampled_key_count else 0.0,
            totalMemoryBytes=p.total_memory_bytes,
            sampledMemoryBytes=p.sampled_memory_bytes,
            avgMemoryBytes=p.avg_memory_bytes,
            maxMemoryBytes=p.max_memory_bytes,
            avgTtlSeconds=p.avg_ttl_seconds,
            types=dict(p.types),
        )


class SizeBucketRead(BaseModel):
    type: str
    bucket: str = Field(description="upper bound of MEMORY USAGE in bytes, or +Inf")
    sampledKeys: int
    keys: int = Field(description="scaled to the keyspace")

    @classmethod
    def of(cls, b: SizeBucket) -> "SizeBucketRead":
        return cls(type=b.type, bucket=b.bucket, sampledKeys=b.sampled_keys, keys=b.keys)


class RankedKeyRead(BaseModel):
    key: str
    type: str
    memoryBytes: int
    ttlMs: int | None = Field(description="null: no expiry")
    freq: int | None = Field(description="OBJECT FREQ (LFU policies only)")
    cardinality: int | None = Field(description="elements (STRLEN for strings)")

    @classmethod
    def of(cls, k: RankedKey) -> "RankedKeyRead":
        return cls(
            key=k.key,
            type=k.type,
            memoryBytes=k.memory_bytes,
            ttlMs=k.ttl_ms,
            freq=k.freq,
            cardinality=k.cardinality,
        )


class KeyAnalyticsSummaryRead(BaseModel):
    """The newest run: where it read, how much, and its figures (empty before any run).

    A cluster connection's run covers every shard (each primary's keys, read on one of
    its replicas when one is online with its link up, else on the primary): its figures
    are the shards' merged, and `nodesRead` says how many nodes were read."""

    connectionId: str
    timestamp: int | None = Field(description="epoch ms of the newest run; null before one")
    source: str | None = Field(
        description="host:port the keys were read from; for a cluster, every node read, "
        "comma-separated ('+N more' for those past 300 characters)"
    )
    onReplica: bool = Field(description="read on a replica; for a cluster, every shard was")
    nodesRead: int = Field(
        description="nodes the keys were read from: 1, or for a cluster the shards read "
        "(one node each); fewer than the cluster's primaries when a shard failed and was "
        "left out; 0 before any run"
    )
    sampledKeys: int = Field(
        description="keys sampled; for a cluster, KEY_ANALYTICS_SAMPLE_SIZE is split "
        "across the shards in proportion to their DBSIZE"
    )
    keyspaceKeys: int = Field(description="DBSIZE of the source; for a cluster, summed")
    complete: bool = Field(
        description="sample size reached or the whole keyspace read; for a cluster, on "
        "every shard and no shard left out"
    )
    durationMs: int
    pausedMs: int = Field(
        description="of durationMs, spent pacing to spare the server; for a cluster (its "
        "shards read at once), the most any shard paused"
    )
    startedCursor: str | None = Field(
        description="SCAN cursor the run started at; for a cluster, '0' when every "
        "shard's was 0, else 'per-shard' (each shard keeps its own)"
    )
    nextCursor: str | None = Field(description="where the next run starts; as startedCursor")
    evictionPolicy: str | None
    totalPatterns: int
    totalKeys: int
    totalMemoryBytes: int = Field(description="estimated, the sum of the patterns'")
    hotKeysNote: str | None = Field(description="why there are no hot keys, when there are none")
    sizeBuckets: list[SizeBucketRead]
    hotKeys: list[RankedKeyRead]
    largestKeys: list[RankedKeyRead]

    @classmethod
    def of(cls, connection_id: str, s: Snapshot | None) -> "KeyAnalyticsSummaryRead":
        if s is None:
            return cls(
                connectionId=connection_id,
                timestamp=None,
                source=None,
                onReplica=False,
                nodesRead=0,
                sampledKeys=0,
                keyspaceKeys=0,
                complete=False,
                durationMs=0,
                pausedMs=0,
                startedCursor=None,
                nextCursor=None,
                evictionPolicy=None,
                totalPatterns=0,
                totalKeys=0,
                totalMemoryBytes=0,
                hotKeysNote=None,
                sizeBuckets=[],
                hotKeys=[],
                largestKeys=[],
            )
        return cls(
            connectionId=connection_id,
            timestamp=s.captured_at,
            source=s.source,
            onReplica=s.on_replica,
            nodesRead=s.nodes_read,
            sampledKeys=s.sampled_keys,
            keyspaceKeys=s.keyspace_keys,
            complete=s.complete,
            durationMs=s.duration_ms,
            pausedMs=s.paused_ms,
            startedCursor=s.started_cursor,
            nextCursor=s.next_cursor,
            evictionPolicy=s.eviction_policy,
            totalPatterns=len(s.patterns),
            totalKeys=sum(p.key_count for p in s.patterns),
            totalMemoryBytes=sum(p.total_memory_bytes for p in s.patterns),
            hotKeysNote=s.hot_keys_note,
            sizeBuckets=[SizeBucketRead.of(b) for b in s.size_buckets],
            hotKeys=[RankedKeyRead.of(k) for k in s.hot_keys],
            largestKeys=[RankedKeyRead.of(k) for k in s.largest_keys],
        )
