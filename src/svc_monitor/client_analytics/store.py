"""Client snapshots: one row per client per CLIENT LIST poll, indexed by (connection, time).

Aggregations run in SQL where they can (group by capture time, name, user, command);
analyses that need rows in Python read at most `ANALYSIS_ROW_CAP` of them.
"""

from collections.abc import Sequence
from typing import Any

from sqlalchemy import (
    BigInteger,
    Column,
    Integer,
    Row,
    String,
    delete,
    func,
    or_,
    select,
)
from sqlalchemy.sql.elements import ColumnElement

from svc_monitor.client_analytics.models import SnapshotFilter
from svc_monitor.storage.database import Database
from svc_monitor.storage.history import history_table

# 60 s polls of 800 clients for an hour; enough for any chart, small enough to stay fast.
ANALYSIS_ROW_CAP = 50_000

client_snapshots = history_table(
    "client_snapshots",
    Column("client_id", BigInteger),
    Column("addr", String(128)),
    Column("laddr", String(128)),
    Column("name", String(256)),
    Column("username", String(256)),
    Column("db", Integer),
    Column("cmd", String(64)),
    Column("age", BigInteger),  # seconds
    Column("idle", BigInteger),  # seconds
    Column("flags", String(32)),
    Column("sub", Integer),
    Column("psub", Integer),
    Column("multi", Integer),
    Column("qbuf", BigInteger),
    Column("qbuf_free", BigInteger),
    Column("obl", BigInteger),
    Column("oll", BigInteger),
    Column("omem", BigInteger),
    Column("tot_mem", BigInteger),
    Column("lib_name", String(128)),
)

HISTORY_TABLES = (client_snapshots,)


def _where(f: SnapshotFilter) -> list[ColumnElement[bool]]:
    t = client_snapshots.c
    clauses: list[ColumnElement[bool]] = [t.connection_id == f.connection_id]
    if f.since is not None:
        clauses.append(t.captured_at >= f.since)
    if f.until is not None:
        clauses.append(t.captured_at <= f.until)
    if f.name is not None:
        clauses.append(t.name == f.name)
    if f.user is not None:
        clauses.append(t.username == f.user)
    if f.addr is not None:
        # An IP alone matches every port of it.
        clauses.append(or_(t.addr == f.addr, t.addr.startswith(f"{f.addr}:")))
    return clauses


class ClientSnapshotStore:
    """Writes client snapshots in batches and answers the client analytics queries."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def insert(self, rows: list[dict[str, Any]]) -> None:
        """One transaction for the whole poll."""
        if rows:
            await self._db.run(lambda conn: conn.execute(client_snapshots.insert(), rows))

    async def snapshots(
        self, where: SnapshotFilter, *, limit: int, offset: int = 0, newest_first: bool = True
    ) -> Sequence[Row[Any]]:
        t = client_snapshots.c
        order = (t.captured_at.desc(), t.id.desc()) if newest_first else (t.captured_at, t.id)
        query = select(client_snapshots).where(*_where(where)).order_by(*order)
        return await self._db.fetch_all(query.limit(limit).offset(offset))

    async def per_capture(self, where: SnapshotFilter) -> Sequence[Row[Any]]:
        """(captured_at, clients) per poll, oldest first."""
        t = client_snapshots.c
        query = (
            select(t.captured_at, func.count().label("clients"))
            .where(*_where(where))
            .group_by(t.captured_at)
            .order_by(t.captured_at)
        )
        return await self._db.fetch_all(query)

    async def per_capture_by(self, where: SnapshotFilter, column: str) -> Sequence[Row[Any]]:
        """(captured_at, value of `column`, clients) per poll and value."""
        t = client_snapshots.c
        query = (
            select(t.captured_at, t[column].label("key"), func.count().label("clients"))
            .where(*_where(where))
            .group_by(t.captured_at, t[column])
        )
        return await self._db.fetch_all(query)

    async def command_counts(self, where: SnapshotFilter, column: str) -> Sequence[Row[Any]]:
        """(identifier, cmd, snapshots) per identifier and last command."""
        t = client_snapshots.c
        query = (
            select(t[column].label("key"), t.cmd, func.count().label("n"))
            .where(*_where(where))
            .group_by(t[column], t.cmd)
        )
        return await self._db.fetch_all(query)

    async def idle(
        self, where: SnapshotFilter, *, threshold_s: int, min_occurrences: int, limit: int
    ) -> Sequence[Row[Any]]:
        """Connections (client id + addr) seen idle at least `threshold_s` often enough."""
        t = client_snapshots.c
        occurrences = func.count().label("occurrences")
        query = (
            select(
                t.client_id,
                t.addr,
                func.max(t.name).label("name"),
                func.max(t.username).label("user"),
                func.avg(t.idle).label("avg_idle"),
                func.max(t.idle).label("max_idle"),
                occurrences,
                func.min(t.captured_at).label("first_seen"),
                func.max(t.captured_at).label("last_seen"),
            )
            .where(*_where(where), t.idle >= threshold_s)
            .group_by(t.client_id, t.addr)
            .having(func.count() >= min_occurrences)
            .order_by(func.max(t.idle).desc(), t.client_id)
            .limit(limit)
        )
        return await self._db.fetch_all(query)

    async def over_buffers(
        self, where: SnapshotFilter, *, qbuf: int, omem: int, limit: int
    ) -> Sequence[Row[Any]]:
        t = client_snapshots.c
        query = (
            select(client_snapshots)
            .where(*_where(where), or_(t.qbuf >= qbuf, t.omem >= omem))
            .order_by(t.captured_at.desc(), t.id.desc())
            .limit(limit)
        )
        return await self._db.fetch_all(query)

    async def buffer_totals(self, where: SnapshotFilter) -> Row[Any] | None:
        t = client_snapshots.c
        query = select(
            func.avg(t.qbuf), func.max(t.qbuf), func.avg(t.omem), func.max(t.omem)
        ).where(*_where(where))
        return await self._db.fetch_one(query)

    async def prune(self, connection_id: str, *, older_than: int) -> int:
        t = client_snapshots.c
        return await self._db.execute(
            delete(client_snapshots).where(
                t.connection_id == connection_id, t.captured_at < older_than
            )
        )
