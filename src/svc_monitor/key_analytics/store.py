"""Key analytics tables: one row per run, one per pattern of a run, and each connection's
SCAN cursor (so a run resumes where the last one stopped, across restarts).

A cluster connection keeps one cursor per shard, in the same table: its rows are keyed
`<connection id>@<primary host:port>` (cursor_key), which needs no migration; the
`source` column still says which server the cursor belongs to.
"""

import hashlib
from collections.abc import Sequence
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    Connection,
    Float,
    Integer,
    Row,
    String,
    Table,
    Text,
    select,
)

from svc_monitor.key_analytics.models import PatternStats, RankedKey, SizeBucket, Snapshot
from svc_monitor.kit.records import from_attributes
from svc_monitor.storage.columns import connection_id_column
from svc_monitor.storage.database import Database
from svc_monitor.storage.history import history_table, in_window
from svc_monitor.storage.metadata import metadata

key_analytics_runs = history_table(
    "key_analytics_runs",
    Column("source", String(300), nullable=False),
    Column("on_replica", Boolean, nullable=False),
    Column("started_cursor", String(32), nullable=False),
    Column("next_cursor", String(32), nullable=False),
    Column("sampled_keys", Integer, nullable=False),
    Column("keyspace_keys", BigInteger, nullable=False),
    Column("duration_ms", BigInteger, nullable=False),
    Column("paused_ms", BigInteger, nullable=False),
    Column("complete", Boolean, nullable=False),
    Column("eviction_policy", String(32)),
    Column("hot_keys_note", Text),
    Column("size_buckets", JSON, nullable=False),
    Column("hot_keys", JSON, nullable=False),
    Column("largest_keys", JSON, nullable=False),
)

key_pattern_snapshots = history_table(
    "key_pattern_snapshots",
    Column("pattern", String(512), nullable=False),
    Column("key_count", BigInteger, nullable=False),
    Column("sampled_key_count", Integer, nullable=False),
    Column("keys_with_ttl", Integer, nullable=False),
    Column("total_memory_bytes", BigInteger, nullable=False),
    Column("sampled_memory_bytes", BigInteger, nullable=False),
    Column("avg_memory_bytes", Float, nullable=False),
    Column("max_memory_bytes", BigInteger, nullable=False),
    Column("avg_ttl_seconds", Float),
    Column("types", JSON, nullable=False),
)

key_analytics_cursors = Table(
    "key_analytics_cursors",
    metadata,
    # The connection's id, or cursor_key(id, shard) for one shard of a cluster.
    connection_id_column(primary_key=True),
    Column("source", String(300), nullable=False),  # a cursor is only valid on its server
    Column("cursor", String(32), nullable=False),
    Column("updated_at", BigInteger, nullable=False),
)

HISTORY_TABLES = (key_analytics_runs, key_pattern_snapshots)


class KeyAnalyticsStore:
    """Writes and reads key analytics runs, their patterns, and the SCAN cursors."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def insert(self, snapshot: Snapshot) -> None:
        """The run and its patterns in one transaction."""
        run = _run_row(snapshot)
        patterns = [_pattern_row(snapshot, p) for p in snapshot.patterns]

        def write(conn: Connection) -> None:
            conn.execute(key_analytics_runs.insert(), [run])
            if patterns:
                conn.execute(key_pattern_snapshots.insert(), patterns)

        await self._db.run(write)

    async def latest_run(self, connection_id: str) -> Row[Any] | None:
        t = key_analytics_runs
        query = (
            select(t)
            .where(t.c.connection_id == connection_id)
            .order_by(t.c.captured_at.desc(), t.c.id.desc())
            .limit(1)
        )
        return await self._db.fetch_one(query)

    async def latest(self, connection_id: str) -> Snapshot | None:
        """The newest run with all its patterns; None before the first."""
        row = await self.latest_run(connection_id)
        if row is None:
            return None
        patterns = await self.patterns(connection_id, captured_at=row.captured_at, limit=10_000)
        return _snapshot(row, patterns)

    async def patterns(
        self,
        connection_id: str,
        *,
        captured_at: int | None = None,
        since: int | None = None,
        until: int | None = None,
        pattern: str | None = None,
        limit: int,
    ) -> Sequence[Row[Any]]:
        """Pattern rows of one run (`captured_at`) or of a window, newest run first and, in
        a run, most memory first."""
        t = key_pattern_snapshots
        query = in_window(select(t), t, connection_id, since=since, until=until)
        if captured_at is not None:
            query = query.where(t.c.captured_at == captured_at)
        if pattern is not None:
            query = query.where(t.c.pattern == pattern)
        order = (t.c.captured_at.desc(), t.c.total_memory_bytes.desc(), t.c.id)
        return await self._db.fetch_all(query.order_by(*order).limit(limit))

    async def cursor(
        self, connection_id: str, *, shard: str | None = None
    ) -> tuple[str, int] | None:
        """(source, cursor) where the connection's (or its shard's) last run stopped, or None."""
        t = key_analytics_cursors.c
        key = cursor_key(connection_id, shard)
        row = await self._db.fetch_one(select(t.source, t.cursor).where(t.connection_id == key))
        return None if row is None else (str(row.source), int(row.cursor))

    async def save_cursor(
        self, connection_id: str, source: str, cursor: int, *, at: int, shard: str | None = None
    ) -> None:
        values = {"source": source, "cursor": str(cursor), "updated_at": at}
        key = cursor_key(connection_id, shard)

        def upsert(conn: Connection) -> None:
            t = key_analytics_cursors
            updated = conn.execute(
                t.update().where(t.c.connection_id == key).values(**values)
            ).rowcount
            if not updated:
                conn.execute(t.insert().values(connection_id=key, **values))

        await self._db.run(upsert)


def cursor_key(connection_id: str, shard: str | None) -> str:
    """The cursor row of a connection (shard None) or of one shard of a cluster connection
    (shard: its primary's host:port). The column holds 64 characters: a longer key (a long
    hostname, IPv6) becomes its SHA-256, which no connection id (a UUID) can equal."""
    if shard is None:
        return connection_id
    key = f"{connection_id}@{shard}"
    return key if len(key) <= 64 else hashlib.sha256(key.encode()).hexdigest()


def _run_row(s: Snapshot) -> dict[str, Any]:
    return {
        "connection_id": s.connection_id,
        "captured_at": s.captured_at,
        "source": s.source,
        "on_replica": s.on_replica,
        "started_cursor": s.started_cursor,
        "next_cursor": s.next_cursor,
        "sampled_keys": s.sampled_keys,
        "keyspace_keys": s.keyspace_keys,
        "duration_ms": s.duration_ms,
        "paused_ms": s.paused_ms,
        "complete": s.complete,
        "eviction_policy": s.eviction_policy,
        "hot_keys_note": s.hot_keys_note,
        "size_buckets": [_bucket_json(b) for b in s.size_buckets],
        "hot_keys": [_key_json(k) for k in s.hot_keys],
        "largest_keys": [_key_json(k) for k in s.largest_keys],
    }


def _pattern_row(s: Snapshot, p: PatternStats) -> dict[str, Any]:
    return {
        "connection_id": s.connection_id,
        "captured_at": s.captured_at,
        "pattern": p.pattern,
        "key_count": p.key_count,
        "sampled_key_count": p.sampled_key_count,
        "keys_with_ttl": p.keys_with_ttl,
        "total_memory_bytes": p.total_memory_bytes,
        "sampled_memory_bytes": p.sampled_memory_bytes,
        "avg_memory_bytes": p.avg_memory_bytes,
        "max_memory_bytes": p.max_memory_bytes,
        "avg_ttl_seconds": p.avg_ttl_seconds,
        "types": dict(p.types),
    }


def _bucket_json(b: SizeBucket) -> dict[str, Any]:
    return {"type": b.type, "bucket": b.bucket, "sampledKeys": b.sampled_keys, "keys": b.keys}


def _key_json(k: RankedKey) -> dict[str, Any]:
    return {
        "key": k.key,
        "type": k.type,
        "memoryBytes": k.memory_bytes,
        "ttlMs": k.ttl_ms,
        "freq": k.freq,
        "cardinality": k.cardinality,
    }


def _snapshot(row: Row[Any], patterns: Sequence[Row[Any]]) -> Snapshot:
    return from_attributes(
        Snapshot,
        row,
        patterns=tuple(pattern_of(p) for p in patterns),
        size_buckets=tuple(
            SizeBucket(b["type"], b["bucket"], b["sampledKeys"], b["keys"])
            for b in row.size_buckets
        ),
        hot_keys=tuple(_ranked_of(k) for k in row.hot_keys),
        largest_keys=tuple(_ranked_of(k) for k in row.largest_keys),
    )


def pattern_of(p: Row[Any]) -> PatternStats:
    """A stored pattern row as the model."""
    return from_attributes(PatternStats, p)


def _ranked_of(k: dict[str, Any]) -> RankedKey:
    return RankedKey(
        key=k["key"],
        type=k["type"],
        memory_bytes=k["memoryBytes"],
        ttl_ms=k["ttlMs"],
        freq=k["freq"],
        cardinality=k["cardinality"],
    )
