"""Stored slow-log and command-log entries, each entry once.

An entry is identified by (connection, node, [log type,] server entry id, start
time): the id alone repeats after a server restart, which starts ids again at 0,
while the start time tells the old entry 0 from the new one. The unique key makes
a retried batch (or a second replica polling the same server) insert nothing twice.
Reads filter and order on the entry's start time, hence a second index.
"""

import json
from collections.abc import Sequence
from typing import Any

from sqlalchemy import (
    BigInteger,
    Column,
    Index,
    Integer,
    Row,
    String,
    Table,
    Text,
    UniqueConstraint,
    select,
)

from svc_monitor.engine.slowlog import LogEntry, LogType
from svc_monitor.slowlog.models import EntryFilter
from svc_monitor.storage.columns import connection_id_column
from svc_monitor.storage.database import Database
from svc_monitor.storage.metadata import metadata


def _log_table(name: str, *extra: Column[Any]) -> Table:
    key = ["connection_id", "node", *(c.name for c in extra), "entry_id", "started_at"]
    return Table(
        name,
        metadata,
        Column("id", Integer, primary_key=True, autoincrement=True),
        connection_id_column(nullable=False),
        Column("captured_at", BigInteger, nullable=False),
        Column("node", String(300), nullable=False),
        *extra,
        Column("entry_id", BigInteger, nullable=False),
        Column("started_at", BigInteger, nullable=False),
        Column("duration", BigInteger, nullable=False),
        Column("command", String(64), nullable=False),
        Column("args", Text, nullable=False),
        Column("client_address", String(300)),
        Column("client_name", String(300)),
        # Named, not by convention: the conventional name passes PostgreSQL's 63-character limit.
        UniqueConstraint(*key, name=f"uq_{name}_entry"),
        Index(f"ix_{name}_connection_time", "connection_id", "captured_at"),
        Index(f"ix_{name}_connection_started", "connection_id", "started_at"),
    )


slowlog_entries = _log_table("slowlog_entries")
commandlog_entries = _log_table(
    "commandlog_entries", Column("log_type", String(16), nullable=False)
)

HISTORY_TABLES = (slowlog_entries, commandlog_entries)


def table_for(log_type: LogType | None) -> Table:
    return slowlog_entries if log_type is None else commandlog_entries


class SlowlogStore:
    """Writes entries once each and reads them back, newest first."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def keep_up(self) -> None:
        """Wait for storage when it is behind (storage/insert_batcher.py)."""
        await self._db.inserts.keep_up()

    def add(
        self,
        connection_id: str,
        *,
        node: str,
        log_type: LogType | None,
        entries: Sequence[LogEntry],
        captured_at: int,
    ) -> None:
        """Queue the entries, oldest first, for the next batched write
        (storage/insert_batcher.py); one already stored is left out then."""
        if not entries:
            return
        table = table_for(log_type)
        extra = {} if log_type is None else {"log_type": log_type}
        rows = [
            {
                "connection_id": connection_id,
                "captured_at": captured_at,
                "node": node,
                **extra,
                "entry_id": e.id,
                "started_at": e.started_at_ms,
                "duration": e.duration,
                # Column width, not meaning: a command name is never this long.
                "command": e.command[:64],
                "args": json.dumps(list(e.args)),
                "client_address": _cut(e.client_address),
                "client_name": _cut(e.client_name),
            }
            for e in sorted(entries, key=lambda e: (e.started_at_ms, e.id))
        ]

        self._db.inserts.add(table, rows, skip_duplicates=True)

    async def newest(
        self, connection_id: str, *, node: str, log_type: LogType | None
    ) -> Row[Any] | None:
        """The most recent stored entry of one log of one node: the seed of a high-water mark."""
        table = table_for(log_type)
        query = select(table.c.entry_id, table.c.started_at).where(
            table.c.connection_id == connection_id, table.c.node == node
        )
        if log_type is not None:
            query = query.where(table.c.log_type == log_type)
        query = query.order_by(table.c.started_at.desc(), table.c.id.desc()).limit(1)
        await self._db.inserts.flush()  # a reader sees every entry recorded so far
        return await self._db.fetch_one(query)

    async def entries(
        self,
        connection_id: str,
        where: EntryFilter,
        *,
        log_type: LogType | None,
        limit: int,
        offset: int = 0,
    ) -> Sequence[Row[Any]]:
        """Stored entries, newest start time first (ties: the later stored first)."""
        table = table_for(log_type)
        query = select(table).where(table.c.connection_id == connection_id)
        if log_type is not None:
            query = query.where(table.c.log_type == log_type)
        if where.since is not None:
            query = query.where(table.c.started_at >= where.since)
        if where.until is not None:
            query = query.where(table.c.started_at <= where.until)
        if where.command is not None:
            query = query.where(table.c.command == where.command.upper())
        if where.min_duration is not None:
            query = query.where(table.c.duration >= where.min_duration)
        query = query.order_by(table.c.started_at.desc(), table.c.id.desc())
        await self._db.inserts.flush()
        return await self._db.fetch_all(query.limit(limit).offset(offset))

    async def durations_since(
        self,
        connection_id: str,
        *,
        since: int,
        until: int | None = None,
        commands: frozenset[str],
        limit: int,
    ) -> Sequence[Row[Any]]:
        """(command, args, duration, started_at) of the slow-log entries of these commands
        started from `since` to `until`, newest first: only the columns the search latency
        figures read."""
        t = slowlog_entries.c
        query = select(t.command, t.args, t.duration, t.started_at).where(
            t.connection_id == connection_id,
            t.started_at >= since,
            t.command.in_(sorted(commands)),
        )
        if until is not None:
            query = query.where(t.started_at <= until)
        query = query.order_by(t.started_at.desc(), t.id.desc()).limit(limit)
        await self._db.inserts.flush()
        return await self._db.fetch_all(query)


def _cut(text: str | None) -> str | None:
    return None if text is None else text[:300]


def decode_args(stored: str) -> list[str]:
    args = json.loads(stored)
    return [str(a) for a in args] if isinstance(args, list) else []
