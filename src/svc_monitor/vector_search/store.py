"""Vector index history: one row per index per poll (FT.INFO), covered by the retention
window like every history table."""

from collections.abc import Sequence
from typing import Any

from sqlalchemy import JSON, BigInteger, Boolean, Column, Float, Row, String, select

from svc_monitor.storage.database import Database
from svc_monitor.storage.history import history_table, in_window

vector_index_snapshots = history_table(
    "vector_index_snapshots",
    Column("index_name", String(256), nullable=False),
    # A cluster's node (host:port) the index was read from; null outside a cluster.
    Column("node", String(300)),
    # Null where the engine does not report the figure (Valkey Search has no sizes).
    Column("docs", BigInteger),
    Column("records", BigInteger),
    Column("indexing_failures", BigInteger),
    Column("percent_indexed", Float),
    Column("indexing", Boolean),
    Column("memory_bytes", BigInteger),
    Column("vector_memory_bytes", BigInteger),
    Column("vector_fields", JSON, nullable=False),
    Column("last_error", String(1024)),
)

HISTORY_TABLES = (vector_index_snapshots,)


class VectorIndexStore:
    """Writes and reads vector index snapshots."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def add(self, rows: list[dict[str, Any]]) -> None:
        """Queue for the next batched write (storage/insert_batcher.py)."""
        self._db.inserts.add(vector_index_snapshots, rows)

    async def history(
        self,
        connection_id: str,
        index_name: str | None,
        *,
        since: int | None,
        until: int | None,
        limit: int,
        offset: int,
    ) -> Sequence[Row[Any]]:
        t = vector_index_snapshots
        query = in_window(select(t), t, connection_id, since=since, until=until)
        if index_name is not None:
            query = query.where(t.c.index_name == index_name)
        query = query.order_by(t.c.captured_at, t.c.id).limit(limit).offset(offset)
        await self._db.inserts.flush()  # a reader sees every poll recorded so far
        return await self._db.fetch_all(query)
