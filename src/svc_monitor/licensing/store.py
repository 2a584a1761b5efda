"""The `shared_licenses` table: the offline licence activated through the API, kept where
every replica sharing the storage reads it, so one activation licenses them all.

One row per kind ("offline"). A row whose token is NULL records a removal: it outranks a
licence file a replica still has in its own SVC_DATA_DIR. No row at all means the
licence was never activated through shared storage, and each replica's file stands.
"""

from dataclasses import dataclass

from sqlalchemy import BigInteger, Column, Connection, String, Table, Text, delete, insert, select

from svc_monitor.storage.database import Database
from svc_monitor.storage.metadata import metadata

OFFLINE = "offline"

shared_licenses = Table(
    "shared_licenses",
    metadata,
    Column("kind", String(20), primary_key=True),
    Column("token", Text, nullable=True),
    Column("updated_at", BigInteger, nullable=False),
)


@dataclass(frozen=True, slots=True)
class SharedToken:
    token: str | None  # None: removed
    updated_at_ms: int


class SharedLicenseStore:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def read_offline(self) -> SharedToken | None:
        row = await self._db.fetch_one(
            select(shared_licenses).where(shared_licenses.c.kind == OFFLINE)
        )
        return None if row is None else SharedToken(row.token, row.updated_at)

    async def write_offline(self, token: str | None, at_ms: int) -> None:
        def write(conn: Connection) -> None:
            conn.execute(delete(shared_licenses).where(shared_licenses.c.kind == OFFLINE))
            conn.execute(
                insert(shared_licenses).values(kind=OFFLINE, token=token, updated_at=at_ms)
            )

        await self._db.run(write)
