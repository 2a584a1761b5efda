"""History of each connection's INFO: memory snapshots, stats samples and their rollups.

Every table is indexed by (connection_id, captured_at): every read is one connection
over a time range. A field the instance did not report is NULL, never 0.

`stats_rollups` holds five-minute averages of `stats_samples`, derived from it by
`roll_up` (and rebuilt from it after a restart), so a chart over a week reads ~2,000
rollup rows instead of ~60,000 samples (bench/ui_pages.py).
"""

from collections.abc import Sequence
from typing import Any

from sqlalchemy import (
    BigInteger,
    Column,
    Connection,
    Float,
    Integer,
    Row,
    String,
    Table,
    bindparam,
    case,
    cast,
    func,
    literal,
    select,
    union_all,
)

from svc_monitor.storage.database import Database
from svc_monitor.storage.history import history_table, in_window, read_window

memory_snapshots = history_table(
    "memory_snapshots",
    Column("used_memory", BigInteger),
    Column("used_memory_rss", BigInteger),
    Column("used_memory_peak", BigInteger),
    Column("mem_fragmentation_ratio", Float),
    Column("maxmemory", BigInteger),
    Column("allocator_frag_ratio", Float),
    Column("ops_per_sec", BigInteger),
    Column("cpu_sys_percent", Float),
    Column("cpu_user_percent", Float),
    Column("io_threaded_reads", BigInteger),
    Column("io_threaded_writes", BigInteger),
)

stats_samples = history_table(
    "stats_samples",
    Column("ops_per_sec", BigInteger),
    Column("connected_clients", BigInteger),
    Column("blocked_clients", BigInteger),
    Column("used_memory", BigInteger),
    Column("cpu_sys_percent", Float),
    Column("cpu_user_percent", Float),
    Column("net_input_kbps", Float),
    Column("net_output_kbps", Float),
    Column("keyspace_hits", BigInteger),
    Column("keyspace_misses", BigInteger),
    Column("hit_ratio", Float),
    Column("keys", BigInteger),
    Column("expires", BigInteger),
    Column("evicted_keys", BigInteger),
    Column("expired_keys", BigInteger),
    Column("connected_replicas", BigInteger),
    Column("repl_offset", BigInteger),
    Column("role", String(16)),
)

# API name -> stats_samples column: the chart series.
SERIES = {
    "opsPerSec": "ops_per_sec",
    "connectedClients": "connected_clients",
    "blockedClients": "blocked_clients",
    "usedMemory": "used_memory",
    "cpuSysPercent": "cpu_sys_percent",
    "cpuUserPercent": "cpu_user_percent",
    "netInputKbps": "net_input_kbps",
    "netOutputKbps": "net_output_kbps",
    "hitRatio": "hit_ratio",
    "keys": "keys",
    "expires": "expires",
    "connectedReplicas": "connected_replicas",
}
ROLLUP_MS = 300_000

stats_rollups = history_table(
    "stats_rollups",  # captured_at: the start of the five minutes, a multiple of ROLLUP_MS
    Column("samples", Integer, nullable=False),
    *(Column(column, Float) for column in SERIES.values()),
)

HISTORY_TABLES = (memory_snapshots, stats_samples, stats_rollups)


def _memory_buckets() -> Any:
    """The forecasts' read, built once: the forecast pass asks it of every connection each
    minute, and building the expression each time cost about as much as running it."""
    m = memory_snapshots.c
    since = bindparam("since", type_=BigInteger)
    bucket = ((m.captured_at - since) // bindparam("bucket_ms", type_=BigInteger)).label("bucket")
    return (
        select(
            bucket,
            func.avg(m.captured_at).label("at"),
            func.avg(m.used_memory).label("used_memory"),
            func.max(m.maxmemory).label("maxmemory"),
            func.avg(m.ops_per_sec).label("ops_per_sec"),
            func.avg(m.cpu_sys_percent + m.cpu_user_percent).label("cpu_total"),
            func.avg(m.mem_fragmentation_ratio).label("mem_fragmentation_ratio"),
        )
        .where(
            m.connection_id == bindparam("connection_id", type_=String),
            m.captured_at.between(since, bindparam("until", type_=BigInteger)),
        )
        .group_by(bucket)
        .order_by(bucket)
    )


_MEMORY_BUCKETS = _memory_buckets()


class MetricsStore:
    """Writes and reads INFO history."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def last_samples(self, connection_ids: Sequence[str]) -> list[Row[Any]]:
        """Each connection's newest stats sample: connection_id, captured_at and the hit
        counters (the rates of the next sample are taken from them)."""
        if not connection_ids:
            return []
        s = stats_samples.c
        newest = (
            select(s.connection_id, func.max(s.captured_at).label("captured_at"))
            .where(s.connection_id.in_(list(connection_ids)))
            .group_by(s.connection_id)
            .subquery()
        )
        query = select(s.connection_id, s.captured_at, s.keyspace_hits, s.keyspace_misses).join(
            newest,
            (s.connection_id == newest.c.connection_id) & (s.captured_at == newest.c.captured_at),
        )
        return list(await self._db.fetch_all(query))

    def add(self, memory: list[dict[str, Any]], stats: list[dict[str, Any]]) -> None:
        """Queue both for the next batched write (storage/insert_batcher.py)."""
        self._db.inserts.add(memory_snapshots, memory)
        self._db.inserts.add(stats_samples, stats)

    async def insert(self, memory: list[dict[str, Any]], stats: list[dict[str, Any]]) -> None:
        """Both written now, with anything else queued, in one transaction."""
        self.add(memory, stats)
        await self._db.inserts.flush()

    async def range(
        self,
        table: Table,
        connection_id: str,
        *,
        since: int | None,
        until: int | None,
        limit: int,
        offset: int = 0,
        newest_first: bool = False,
    ) -> Sequence[Row[Any]]:
        await self._db.inserts.flush()  # a reader sees every sample taken so far
        return await read_window(
            self._db,
            table,
            connection_id,
            since=since,
            until=until,
            limit=limit,
            offset=offset,
            newest_first=newest_first,
        )

    async def count(
        self, table: Table, connection_id: str, *, since: int | None, until: int | None
    ) -> int:
        query = in_window(
            select(func.count()).select_from(table), table, connection_id, since=since, until=until
        )
        await self._db.inserts.flush()
        row = await self._db.fetch_one(query)
        return int(row[0]) if row is not None else 0

    async def memory_buckets(
        self, connection_id: str, *, since: int, until: int, bucket_ms: int
    ) -> Sequence[Row[Any]]:
        """Memory snapshots from `since` to `until` averaged into `bucket_ms` buckets, oldest
        first: (at, used_memory, maxmemory, ops_per_sec, cpu_total, mem_fragmentation_ratio).

        AVG skips NULLs, so a field missing from some snapshots averages the others, and a
        bucket where no snapshot had it reads NULL.
        """
        params = {"connection_id": connection_id, "since": since, "until": until}
        await self._db.inserts.flush()
        return await self._db.run(
            lambda conn: conn.execute(_MEMORY_BUCKETS, {**params, "bucket_ms": bucket_ms}).all()
        )

    async def roll_up(self, *, now_ms: int) -> int:
        """Average every finished five minutes of samples not yet rolled up; rows written.

        Idempotent: each connection resumes after its last rollup, and the five minutes
        still running are left for the next call.
        """
        finished = now_ms // ROLLUP_MS * ROLLUP_MS
        s, r = stats_samples.c, stats_rollups.c
        # One statement for every connection (a query per connection cost a hundred
        # compiles a minute at a hundred connections): each resumes after its own mark.
        marks = (
            select(r.connection_id, func.max(r.captured_at).label("last"))
            .group_by(r.connection_id)
            .subquery()
        )
        start = func.coalesce(marks.c["last"] + ROLLUP_MS, 0)
        bucket = (s.captured_at // ROLLUP_MS * ROLLUP_MS).label("captured_at")
        averages = [func.avg(s[column]).label(column) for column in SERIES.values()]
        query = (
            select(s.connection_id, bucket, func.count().label("samples"), *averages)
            .select_from(stats_samples.outerjoin(marks, marks.c.connection_id == s.connection_id))
            .where(s.captured_at >= start, s.captured_at < finished)
            .group_by(s.connection_id, bucket)
        )
        columns = ["connection_id", "captured_at", "samples", *SERIES.values()]
        insert = stats_rollups.insert().from_select(columns, query)

        def work(conn: Connection) -> int:
            written: int = conn.execute(insert).rowcount
            return written

        await self._db.inserts.flush()
        return await self._db.run(work)

    async def series(
        self, connection_id: str, *, since: int, until: int, bucket_ms: int
    ) -> Sequence[Row[Any]]:
        """The chart series averaged into `bucket_ms` buckets from `since`.

        Buckets of five minutes or more read the rollups, plus the raw samples taken
        after the last rollup; smaller buckets read the samples alone.
        """
        s, r = stats_samples.c, stats_rollups.c
        coarse = bucket_ms >= ROLLUP_MS

        def work(conn: Connection) -> Sequence[Row[Any]]:
            # Its own query, so the tail below is an index range, not a per-row subquery.
            last = (
                conn.execute(
                    select(func.max(r.captured_at)).where(r.connection_id == connection_id)
                ).scalar()
                if coarse
                else None
            )
            raw_from = since if last is None else max(since, last + ROLLUP_MS)
            raw = select(
                s.captured_at,
                literal(1).label("weight"),
                *(cast(s[column], Float).label(column) for column in SERIES.values()),
            ).where(s.connection_id == connection_id, s.captured_at.between(raw_from, until))
            source: Any = raw
            if last is not None:
                rolled = select(
                    r.captured_at,
                    r.samples.label("weight"),
                    *(r[column] for column in SERIES.values()),
                ).where(r.connection_id == connection_id, r.captured_at.between(since, until))
                source = union_all(rolled, raw)
            rows = source.subquery()
            bucket = ((rows.c.captured_at - since) // bucket_ms).label("bucket")
            weight = rows.c.weight
            averages = [
                (
                    func.sum(rows.c[column] * weight)
                    / func.sum(case((rows.c[column].is_not(None), weight)))
                ).label(name)
                for name, column in SERIES.items()
            ]
            query = (
                select(bucket, func.sum(weight).label("samples"), *averages)
                .group_by(bucket)
                .order_by(bucket)
            )
            return conn.execute(query).all()

        await self._db.inserts.flush()
        return await self._db.run(work)
