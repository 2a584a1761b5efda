"""Small facts the service keeps about itself (seeded defaults, the key canary)."""

from sqlalchemy import Column, Connection, String, Table, Text, select

from svc_monitor.storage.database import Database
from svc_monitor.storage.metadata import metadata

app_meta = Table(
    "app_meta",
    metadata,
    Column("key", String(64), primary_key=True),
    Column("value", Text, nullable=False),
)


class AppMetaStore:
    """Key-value facts in the `app_meta` table."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def get(self, key: str) -> str | None:
        row = await self._db.fetch_one(select(app_meta.c.value).where(app_meta.c.key == key))
        return None if row is None else str(row.value)

    async def put(self, key: str, value: str) -> None:
        def upsert(conn: Connection) -> None:
            updated = conn.execute(
                app_meta.update().where(app_meta.c.key == key).values(value=value)
            ).rowcount
            if not updated:
                conn.execute(app_meta.insert().values(key=key, value=value))

        await self._db.run(upsert)
