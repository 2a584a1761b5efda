"""The single row of `runtime_settings`: a JSON object of the values changed through the API."""

import json
from typing import Any

from sqlalchemy import BigInteger, Column, Connection, Integer, Table, Text, select

from svc_monitor.storage.database import Database
from svc_monitor.storage.metadata import metadata

runtime_settings = Table(
    "runtime_settings",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("values", Text, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
)

_ROW_ID = 1


class RuntimeSettingsStore:
    """Reads and writes the one settings row."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def load(self) -> tuple[dict[str, Any], int] | None:
        row = await self._db.fetch_one(
            select(runtime_settings).where(runtime_settings.c.id == _ROW_ID)
        )
        if row is None:
            return None
        return json.loads(row.values), int(row.updated_at)

    async def save(self, values: dict[str, Any], *, updated_at: int) -> None:
        encoded = json.dumps(values, sort_keys=True)

        def upsert(conn: Connection) -> None:
            changed = conn.execute(
                runtime_settings.update()
                .where(runtime_settings.c.id == _ROW_ID)
                .values(values=encoded, updated_at=updated_at)
            ).rowcount
            if not changed:
                conn.execute(
                    runtime_settings.insert().values(
                        id=_ROW_ID, values=encoded, updated_at=updated_at
                    )
                )

        await self._db.run(upsert)

    @property
    def persistent(self) -> bool:
        return self._db.persistent

    async def clear(self) -> None:
        await self._db.execute(runtime_settings.delete())
