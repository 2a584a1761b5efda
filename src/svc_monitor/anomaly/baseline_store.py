"""The `anomaly_baselines` table: each connection's detector state (baselines.py), written
by the replica that polls it and read by the one that takes it over."""

from collections.abc import Collection
from typing import Any

from sqlalchemy import JSON, BigInteger, Column, Connection, String, Table, delete, insert, select

from svc_monitor.storage.columns import CONNECTION_ID_LENGTH
from svc_monitor.storage.database import Database
from svc_monitor.storage.metadata import metadata

anomaly_baselines = Table(
    "anomaly_baselines",
    metadata,
    Column("connection_id", String(CONNECTION_ID_LENGTH), primary_key=True),
    Column("state", JSON, nullable=False),
    Column("saved_at", BigInteger, nullable=False),
)


class BaselineStore:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def save(self, states: dict[str, dict[str, Any]], *, at_ms: int) -> None:
        """Replace these connections' saved states, in one transaction."""
        if not states:
            return

        def save(conn: Connection) -> None:
            ids = list(states)
            conn.execute(
                delete(anomaly_baselines).where(anomaly_baselines.c.connection_id.in_(ids))
            )
            conn.execute(
                insert(anomaly_baselines),
                [{"connection_id": i, "state": states[i], "saved_at": at_ms} for i in ids],
            )

        await self._db.run(save, background=True)

    async def load(self, connection_ids: Collection[str]) -> dict[str, Any]:
        """The saved state of each of these connections that has one."""
        if not connection_ids:
            return {}
        rows = await self._db.fetch_all(
            select(anomaly_baselines.c.connection_id, anomaly_baselines.c.state).where(
                anomaly_baselines.c.connection_id.in_(list(connection_ids))
            )
        )
        return {row.connection_id: row.state for row in rows}

    async def remove(self, connection_ids: Collection[str]) -> None:
        if connection_ids:
            await self._db.execute(
                delete(anomaly_baselines).where(
                    anomaly_baselines.c.connection_id.in_(list(connection_ids))
                )
            )
