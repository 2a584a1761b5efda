"""Latency history: LATENCY LATEST events (stored when an event's latest spike moves) and
LATENCY HISTOGRAM snapshots (one per poll, as JSON)."""

from collections.abc import Sequence
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Column,
    Connection,
    Index,
    Integer,
    Row,
    String,
    Table,
    func,
    select,
)

from svc_monitor.storage.database import Database
from svc_monitor.storage.metadata import metadata

latency_snapshots = Table(
    "latency_snapshots",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("connection_id", String(64), nullable=False),
    Column("captured_at", BigInteger, nullable=False),
    Column("event_name", String(64), nullable=False),
    Column("latest_event_at", BigInteger, nullable=False),  # epoch ms (engine: seconds)
    Column("latest_ms", BigInteger, nullable=False),
    Column("max_ms", BigInteger, nullable=False),
    Index("ix_latency_snapshots_connection_time", "connection_id", "captured_at"),
)

latency_histograms = Table(
    "latency_histograms",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("connection_id", String(64), nullable=False),
    Column("captured_at", BigInteger, nullable=False),
    Column("data", JSON, nullable=False),
    Index("ix_latency_histograms_connection_time", "connection_id", "captured_at"),
)

HISTORY_TABLES = (latency_snapshots, latency_histograms)


class LatencyStore:
    """Writes and reads latency history."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def insert(
        self, snapshots: list[dict[str, Any]], histogram: dict[str, Any] | None
    ) -> None:
        """Both in one transaction."""

        def write(conn: Connection) -> None:
            if snapshots:
                conn.execute(latency_snapshots.insert(), snapshots)
            if histogram is not None:
                conn.execute(latency_histograms.insert(), [histogram])

        if snapshots or histogram is not None:
            await self._db.run(write)

    async def latest_event_times(self, connection_id: str) -> dict[str, int]:
        """The newest stored spike time of each event, to resume deduplication after a
        restart without storing the server's current events a second time."""
        t = latency_snapshots.c
        query = (
            select(t.event_name.label("name"), func.max(t.latest_event_at).label("at"))
            .where(t.connection_id == connection_id)
            .group_by(t.event_name)
        )
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
        query = select(table).where(table.c.connection_id == connection_id)
        if since is not None:
            query = query.where(table.c.captured_at >= since)
        if until is not None:
            query = query.where(table.c.captured_at <= until)
        return await self._db.fetch_all(
            query.order_by(table.c.captured_at, table.c.id).limit(limit).offset(offset)
        )
