"""Commandstats history: one row per command whose `calls` moved between two polls.

Indexed by (connection_id, captured_at) like every history table, and by
(connection_id, command, captured_at) because the history route reads one command.
"""

from collections.abc import Sequence
from typing import Any

from sqlalchemy import (
    BigInteger,
    Column,
    Float,
    Index,
    Row,
    String,
    select,
)

from svc_monitor.storage.database import Database
from svc_monitor.storage.history import history_table

commandstats_samples = history_table(
    "commandstats_samples",
    Column("command", String(128), nullable=False),
    Column("calls", BigInteger, nullable=False),
    # Null for a pushed instance that sends cmd.calls without cmd.usec.
    Column("usec", BigInteger),
    Column("usec_per_call", Float),
    # Null where the engine does not report them (older engines lack rejected/failed).
    Column("rejected_calls", BigInteger),
    Column("failed_calls", BigInteger),
    Column("calls_delta", BigInteger, nullable=False),
    Column("usec_delta", BigInteger),
    Column("interval_ms", BigInteger, nullable=False),
    Index(
        "ix_commandstats_samples_connection_command_time",
        "connection_id",
        "command",
        "captured_at",
    ),
)

HISTORY_TABLES = (commandstats_samples,)


class CommandstatsStore:
    """Writes and reads commandstats samples."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def add(self, rows: list[dict[str, Any]]) -> None:
        """Queue rows for the next batched write (storage/insert_batcher.py)."""
        self._db.inserts.add(commandstats_samples, rows)

    async def history(
        self,
        connection_id: str,
        command: str,
        *,
        since: int | None,
        until: int | None,
        limit: int,
    ) -> Sequence[Row[Any]]:
        t = commandstats_samples.c
        query = select(commandstats_samples).where(
            t.connection_id == connection_id, t.command == command
        )
        if since is not None:
            query = query.where(t.captured_at >= since)
        if until is not None:
            query = query.where(t.captured_at <= until)
        await self._db.inserts.flush()  # a reader sees every poll recorded so far
        return await self._db.fetch_all(query.order_by(t.captured_at, t.id).limit(limit))
