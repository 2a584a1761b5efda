"""Retention of history: the retention window, and a row cap for memory storage.

- With a window (the `retentionDays` runtime setting, which LOCAL_RETENTION_DAYS seeds):
  one sweep at startup and one a day delete every history row older than the window; an
  hourly trim applies the window to the sample stores (the fast-growing ones) in between.
  The window is read at every sweep, so a change applies without a restart. None: nothing
  is ever deleted.
- With STORAGE_TYPE=memory: every history table is capped at MEMORY_ROW_CAP rows (oldest
  go first), checked hourly and at startup, so the process cannot grow without bound.

Every history table has `id` (ascending with time), `connection_id` and `captured_at`
(epoch ms); the composition root hands the tables in, so storage knows no domain.
"""

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence

from sqlalchemy import Connection, Table, delete, func, select

from svc_monitor.storage.database import Database

logger = logging.getLogger(__name__)

DAY_MS = 86_400_000
HOUR_S = 3600.0
# 200k rows per table is ~50-100 MB of SQLite in memory at our row widths: room for a
# day of 10 s samples for 20 connections, while a runaway store still stops somewhere.
MEMORY_ROW_CAP = 200_000


class HistoryRetention:
    """Keeps history within its window and, in memory, within its cap."""

    def __init__(
        self,
        db: Database,
        tables: Sequence[Table],
        *,
        sample_tables: Sequence[Table] = (),
        retention_days: int | Callable[[], Awaitable[int | None]] | None,
        row_cap: int | None,
    ) -> None:
        """`retention_days` is a fixed window, or how to read the one in force."""
        self._db = db
        self._tables = list(tables)
        self._sample_tables = list(sample_tables)
        self._retention_days = retention_days
        self._row_cap = row_cap

    async def window_days(self) -> int | None:
        if callable(self._retention_days):
            return await self._retention_days()
        return self._retention_days

    async def sweep(
        self, *, now_ms: int | None = None, tables: Sequence[Table] | None = None
    ) -> int:
        """Delete rows older than the window; how many went. A no-op without a window."""
        days = await self.window_days()
        if days is None:
            return 0
        cutoff = (now_ms if now_ms is not None else int(time.time() * 1000)) - days * DAY_MS
        targets = list(tables) if tables is not None else self._tables

        def work(conn: Connection) -> int:
            return sum(
                conn.execute(delete(t).where(t.c.captured_at < cutoff)).rowcount for t in targets
            )

        removed = await self._db.run(work)
        if removed:
            logger.info(
                "retention: removed %d history rows older than %d days",
                removed,
                days,
            )
        return removed

    async def trim(self) -> int:
        """Cap each table at the newest `row_cap` rows; how many went. A no-op without a cap."""
        cap = self._row_cap
        if cap is None:
            return 0

        def work(conn: Connection) -> int:
            removed = 0
            for table in self._tables:
                newest = conn.execute(select(func.max(table.c.id))).scalar()
                if newest is not None and newest > cap:
                    statement = delete(table).where(table.c.id <= newest - cap)
                    removed += conn.execute(statement).rowcount
            return removed

        removed = await self._db.run(work)
        if removed:
            logger.info("retention: trimmed %d rows to keep memory storage bounded", removed)
        return removed

    async def run(self) -> None:
        """Sweep and trim at startup, trim hourly, sweep daily; until cancelled."""
        await self.sweep()
        await self.trim()
        hours = 0
        while True:
            await asyncio.sleep(HOUR_S)
            hours += 1
            await self.sweep(tables=self._tables if hours % 24 == 0 else self._sample_tables)
            await self.trim()
