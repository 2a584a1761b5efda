"""The `alert_states` table: the alerts firing now, kept where replicas sharing the storage
can read them, so the replica that takes a connection over carries on from them."""

from collections.abc import Collection
from typing import Any

from sqlalchemy import BigInteger, Column, Connection, String, Table, delete, select

from svc_monitor.storage.columns import CONNECTION_ID_LENGTH
from svc_monitor.storage.database import Database
from svc_monitor.storage.insert_batcher import insert_statement
from svc_monitor.storage.metadata import metadata

alert_states = Table(
    "alert_states",
    metadata,
    Column("connection_id", String(CONNECTION_ID_LENGTH), primary_key=True),
    # "instance.down", or "webhook:<webhook id, or the OTLP event export's name>:<event type>"
    Column("alert", String(200), primary_key=True),
    Column("since", BigInteger, nullable=False),
)


class AlertStateStore:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def apply(self, changes: list[tuple[str, str, int | None]]) -> None:
        """(connection id, alert, since or None to clear), in order, in one transaction."""

        def apply(conn: Connection) -> None:
            for connection_id, alert, since in changes:
                where = (
                    alert_states.c.connection_id == connection_id,
                    alert_states.c.alert == alert,
                )
                conn.execute(delete(alert_states).where(*where))
                if since is not None:
                    values: dict[str, Any] = {
                        "connection_id": connection_id,
                        "alert": alert,
                        "since": since,
                    }
                    conn.execute(
                        insert_statement(conn, alert_states, skip_duplicates=True).values(values)
                    )

        await self._db.run(apply)

    async def clear_starting(self, prefix: str) -> None:
        """Clear every alert whose name starts with `prefix`, on every connection."""
        await self._db.execute(
            delete(alert_states).where(alert_states.c.alert.startswith(prefix, autoescape=True))
        )

    async def of(self, connection_ids: Collection[str]) -> list[tuple[str, str, int]]:
        """Every stored alert of these connections: (connection id, alert, since)."""
        if not connection_ids:
            return []
        rows = await self._db.fetch_all(
            select(alert_states).where(alert_states.c.connection_id.in_(list(connection_ids)))
        )
        return [(row.connection_id, row.alert, row.since) for row in rows]
