"""Latency history: LATENCY LATEST events (stored when an event's latest spike moves) and
LATENCY HISTOGRAM snapshots (one per poll, as JSON)."""

from collections.abc import Sequence
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Column,
    Row,
    String,
    Table,
    func,
    select,
)

from svc_monitor.storage.database import Database
from svc_monitor.storage.history import history_table, read_window

latency_snapshots = history_table(
    "latency_snapshots",
    Column("event_name", String(64), nullable=False),
    Column("latest_event_at", BigInteger, nullable=False),  # epoch ms (engine: seconds)
    Column("latest_ms", BigInteger, nullable=False),
    Column("max_ms", BigInteger, nullable=False),
)

latency_histograms = history_table(
    "latency_histograms",
    Column("data", JSON, nullable=False),
)

HISTORY_TABLES = (latency_snapshots, latency_histograms)


class LatencyStore:
    """Writes and reads latency history."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def add(self, snapshots: list[dict[str, Any]], histogram: dict[str, Any] | None) -> None:
        """Queue both for the next batched write (storage/insert_batcher.py)."""
        self._db.inserts.add(latency_snapshots, snapshots)
        if histogram is not None:
            self._db.inserts.add(latency_histograms, [histogram])

    async def latest_event_times(self, connection_id: str) -> dict[str, int]:
        """The newest stored spike time of each event, to resume deduplication after a
        restart without storing the server's current events a second time."""
        t = latency_snapshots.c
        query = (
            select(t.event_name.label("name"), func.max(t.latest_event_at).label("at"))
            .where(t.connection_id == connection_id)
            .group_by(t.event_name)
        )
        await self._db.inserts.flush()  # a reader sees every poll recorded so far
        rows = await self._db.fetch_all(query)
        return {str(r.name): int(r.at) for r in rows}

    async def range(
        self,
        table: Table,
        connection_id: str,
        *,
        since: int | None,
        until: int | None,
        limit: int,
        offset: int,
    ) -> Sequence[Row[Any]]:
        await self._db.inserts.flush()
        return await read_window(
            self._db, table, connection_id, since=since, until=until, limit=limit, offset=offset
        )
