"""The shape every history table shares, and the time-window read they all make.

A history table has `id` (ascending with time), `connection_id`, `captured_at` (epoch
ms) and an index on (connection_id, captured_at): every read is one connection over a
time range, and retention sweeps by `captured_at`.
"""

from collections.abc import Sequence
from typing import Any

from sqlalchemy import (
    BigInteger,
    Column,
    Index,
    Integer,
    Row,
    Select,
    Table,
    select,
)
from sqlalchemy.sql.schema import SchemaItem

from svc_monitor.storage.columns import connection_id_column
from svc_monitor.storage.database import Database
from svc_monitor.storage.metadata import metadata


def history_table(name: str, *items: SchemaItem) -> Table:
    """A history table with the shared columns and index, plus its own `items`."""
    return Table(
        name,
        metadata,
        Column("id", Integer, primary_key=True, autoincrement=True),
        connection_id_column(nullable=False),
        Column("captured_at", BigInteger, nullable=False),
        *items,
        Index(f"ix_{name}_connection_time", "connection_id", "captured_at"),
    )


def in_window(
    query: Select[Any], table: Table, connection_id: str, *, since: int | None, until: int | None
) -> Select[Any]:
    """`query` narrowed to one connection and, where given, a captured_at window."""
    query = query.where(table.c.connection_id == connection_id)
    if since is not None:
        query = query.where(table.c.captured_at >= since)
    if until is not None:
        query = query.where(table.c.captured_at <= until)
    return query


async def read_window(
    db: Database,
    table: Table,
    connection_id: str,
    *,
    since: int | None,
    until: int | None,
    limit: int,
    offset: int = 0,
    newest_first: bool = False,
) -> Sequence[Row[Any]]:
    """Rows of one connection in a window, oldest first (or newest), paged."""
    query = in_window(select(table), table, connection_id, since=since, until=until)
    order = table.c.captured_at.desc() if newest_first else table.c.captured_at
    return await db.fetch_all(query.order_by(order, table.c.id).limit(limit).offset(offset))
