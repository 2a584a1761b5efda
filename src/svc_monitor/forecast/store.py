"""`metric_forecast_settings`: one row per (connection, metric kind) an admin has saved."""

from collections.abc import Sequence
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Connection,
    Float,
    Row,
    String,
    Table,
    select,
)

from svc_monitor.storage.columns import connection_id_column
from svc_monitor.storage.database import Database
from svc_monitor.storage.metadata import metadata

metric_forecast_settings = Table(
    "metric_forecast_settings",
    metadata,
    connection_id_column(primary_key=True),
    Column("metric_kind", String(32), primary_key=True),
    Column("enabled", Boolean, nullable=False),
    Column("ceiling", Float, nullable=True),  # NULL: the kind's default ceiling
    Column("rolling_window_ms", BigInteger, nullable=False),
    Column("alert_threshold_ms", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),  # epoch ms
)


class ForecastStore:
    """Reads and writes forecast settings rows."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def get(self, connection_id: str, metric_kind: str) -> Row[Any] | None:
        t = metric_forecast_settings.c
        return await self._db.fetch_one(
            select(metric_forecast_settings).where(
                t.connection_id == connection_id, t.metric_kind == metric_kind
            )
        )

    async def all_of(self, connection_id: str) -> Sequence[Row[Any]]:
        t = metric_forecast_settings.c
        return await self._db.fetch_all(
            select(metric_forecast_settings).where(t.connection_id == connection_id)
        )

    async def save(self, row: dict[str, Any]) -> None:
        """Insert or replace the row of (row["connection_id"], row["metric_kind"])."""
        t = metric_forecast_settings.c
        key = (t.connection_id == row["connection_id"], t.metric_kind == row["metric_kind"])

        def upsert(conn: Connection) -> None:
            values = {k: v for k, v in row.items() if k not in ("connection_id", "metric_kind")}
            changed = conn.execute(
                metric_forecast_settings.update().where(*key).values(**values)
            ).rowcount
            if not changed:
                conn.execute(metric_forecast_settings.insert().values(**row))

        await self._db.run(upsert)
