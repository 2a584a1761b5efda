"""The `replicas` table: one row per running svc-monitor sharing this storage."""

from typing import Any

from sqlalchemy import BigInteger, Column, Integer, Row, String, Table, delete, select, update

from svc_monitor.replicas.models import ReplicaRecord
from svc_monitor.storage.database import Database
from svc_monitor.storage.metadata import metadata

replicas = Table(
    "replicas",
    metadata,
    Column("id", String(120), primary_key=True),
    Column("address", String(300), nullable=False),
    Column("version", String(64), nullable=False),
    Column("started_at", BigInteger, nullable=False),
    Column("heartbeat_at", BigInteger, nullable=False),
    Column("polled_connections", Integer, nullable=False),
)


class ReplicaStore:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def register(self, record: ReplicaRecord) -> None:
        """Insert our row, or put it back if the others pruned it while we were silent."""
        values = _values(record)

        def register(conn: Any) -> None:
            found = conn.execute(
                update(replicas).where(replicas.c.id == record.id).values(**values)
            ).rowcount
            if not found:
                conn.execute(replicas.insert().values(id=record.id, **values))

        await self._db.run(register)

    async def heartbeat(self, replica_id: str, at_ms: int, polled_connections: int) -> bool:
        """Refresh our row; False when it is gone (pruned as dead by another replica)."""
        touched = await self._db.execute(
            update(replicas)
            .where(replicas.c.id == replica_id)
            .values(heartbeat_at=at_ms, polled_connections=polled_connections)
        )
        return touched > 0

    async def list(self) -> list[ReplicaRecord]:
        rows = await self._db.fetch_all(select(replicas).order_by(replicas.c.started_at))
        return [_record(row) for row in rows]

    async def remove(self, replica_id: str) -> None:
        await self._db.execute(delete(replicas).where(replicas.c.id == replica_id))

    async def prune(self, silent_since_ms: int) -> int:
        """Delete the rows whose heartbeat stopped before `silent_since_ms`."""
        return await self._db.execute(
            delete(replicas).where(replicas.c.heartbeat_at < silent_since_ms)
        )


def _values(record: ReplicaRecord) -> dict[str, Any]:
    return {
        "address": record.address,
        "version": record.version,
        "started_at": record.started_at_ms,
        "heartbeat_at": record.heartbeat_at_ms,
        "polled_connections": record.polled_connections,
    }


def _record(row: Row[Any]) -> ReplicaRecord:
    return ReplicaRecord(
        id=row.id,
        address=row.address,
        version=row.version,
        started_at_ms=row.started_at,
        heartbeat_at_ms=row.heartbeat_at,
        polled_connections=row.polled_connections,
    )
