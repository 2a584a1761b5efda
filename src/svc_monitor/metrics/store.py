"""History of each connection's INFO: memory snapshots and stats samples.

Both tables are indexed by (connection_id, captured_at): every read is one
connection over a time range. A field the instance did not report is NULL, never 0.
"""

from collections.abc import Sequence
from typing import Any

from sqlalchemy import (
    BigInteger,
    Column,
    Connection,
    Float,
    Row,
    String,
    Table,
    func,
    select,
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

HISTORY_TABLES = (memory_snapshots, stats_samples)


class MetricsStore:
    """Writes and reads INFO history."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def insert(self, memory: list[dict[str, Any]], stats: list[dict[str, Any]]) -> None:
        """Both batches in one transaction."""

        def write(conn: Connection) -> None:
            if memory:
                conn.execute(memory_snapshots.insert(), memory)
            if stats:
                conn.execute(stats_samples.insert(), stats)

        await self._db.run(write)

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
        row = await self._db.fetch_one(query)
        return int(row[0]) if row is not None else 0
