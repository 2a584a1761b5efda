"""History rows written together: one transaction a second for every connection's samples.

Each INFO history sample and each commandstats poll used to be a transaction of its own,
a trip to the storage thread (or a PostgreSQL round trip) for one or two rows: at 100
connections about twenty a second, most of that thread's CPU (bench/poll_fanout.py).
Rows handed to `add` wait at most `delay_s` and are written in one transaction with one
executemany per table.

What a reader sees does not change: a store flushes before every read of its tables,
and the database flushes before it closes. If the write fails (storage down, disk full),
the rows are kept for the next attempt up to `max_rows`; past that the oldest are dropped
and counted, so an outage costs history, never the poller's memory or its cadence.
"""

import asyncio
import functools
import itertools
import logging
import operator
import sqlite3
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Dialect, Insert, Table
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import (
    DBAPIError,
    InterfaceError,
    InternalError,
    OperationalError,
    ProgrammingError,
)

from svc_monitor.storage.statement_sizes import statement_sizes

logger = logging.getLogger(__name__)

Row = dict[str, Any]
Run = Callable[[Callable[[Connection], None]], Awaitable[None]]

DELAY_S = 1.0
# A minute of samples for 1,000 connections and then some: room to ride out a short outage.
MAX_ROWS = 100_000


class InsertBatcher:
    """Rows for any number of tables, written in one transaction per `delay_s`."""

    def __init__(self, run: Run, *, delay_s: float = DELAY_S, max_rows: int = MAX_ROWS) -> None:
        self._run = run
        self._delay_s = delay_s
        self._max_rows = max_rows
        self._high_water = max(1, max_rows // 10)
        self._pending: dict[Table, list[Row]] = {}
        self._skipping: set[Table] = set()  # tables whose rows skip duplicates
        self._pending_rows = 0
        self._timer: asyncio.TimerHandle | None = None
        self._writer: asyncio.Task[None] | None = None
        self._lock: asyncio.Lock | None = None
        self.dropped = 0  # over the bound while storage was down
        self.refused = 0  # rows storage would not take
        self._failing = False
        # Once closed nothing is written: a timer or a late add must not reopen storage
        # (on PostgreSQL the engine would open a connection nothing ever closes).
        self._closed = False

    @property
    def pending(self) -> int:
        return self._pending_rows

    async def keep_up(self) -> None:
        """For a busy writer (the log polls): past `high_water` queued rows, write them now
        and wait. Storage that falls behind then slows the polls that fill it, as one
        transaction per poll did, instead of filling the queue until rows are dropped."""
        if self._pending_rows >= self._high_water:
            await self.flush()

    def add(self, table: Table, rows: list[Row], *, skip_duplicates: bool = False) -> None:
        """Queue rows for `table`; they are written within `delay_s`. With
        `skip_duplicates`, a row that hits one of the table's unique keys is left out
        (ON CONFLICT DO NOTHING), so a row queued twice is stored once."""
        if not rows:
            return
        if self._closed:
            self.dropped += len(rows)
            return
        if skip_duplicates:
            self._skipping.add(table)
        self._pending.setdefault(table, []).extend(rows)
        self._pending_rows += len(rows)
        self._bound()
        if self._timer is None:
            loop = asyncio.get_running_loop()
            self._timer = loop.call_later(self._delay_s, self._write_in_background)

    async def flush(self) -> None:
        """Write everything queued so far; raises what the write raised (rows are kept)."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            pending, self._pending = self._pending, {}
            count, self._pending_rows = self._pending_rows, 0
            if not count:
                return

            skipping = self._skipping

            def write(conn: Connection) -> None:
                for table, rows in pending.items():
                    for group in _by_columns(rows):
                        _insert_many(conn, table, group, skip_duplicates=table in skipping)

            try:
                await self._run(write)
            except Exception as exc:
                if _is_outage(exc):
                    self._put_back(pending, count)
                    raise
                # Some row storage will not take (a counter past 64 bits, say): write the
                # rest one by one rather than retry the whole batch for ever.
                await self._write_each(pending)
            except BaseException:
                self._put_back(pending, count)
                raise
            if self._failing:
                self._failing = False
                logger.info("history writes resumed")

    async def close(self) -> None:
        """Write what is queued (once more if a write is in flight); log a failure."""
        if self._writer is not None:
            await asyncio.gather(self._writer, return_exceptions=True)
        try:
            await self.flush()
        except Exception as exc:
            logger.warning("history rows not written at shutdown: %s", _reason(exc))
        finally:
            self._closed = True
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None

    async def _write_each(self, pending: dict[Table, list[Row]]) -> None:
        queue = [(table, row) for table, rows in pending.items() for row in rows]
        refused = 0
        for index, (table, row) in enumerate(queue):
            try:
                skip = table in self._skipping
                await self._run(functools.partial(_insert, table=table, row=row, skip=skip))
            except Exception as exc:
                if not _is_outage(exc):
                    refused += 1
                    continue
                rest: dict[Table, list[Row]] = {}
                for left_table, left_row in queue[index:]:
                    rest.setdefault(left_table, []).append(left_row)
                self._put_back(rest, len(queue) - index)
                raise
        if refused:
            self.refused += refused
            logger.warning("history rows storage refused, left out: %d so far", self.refused)

    def _write_in_background(self) -> None:
        self._timer = None
        if self._closed:
            return
        if self._writer is None or self._writer.done():
            self._writer = asyncio.create_task(self._write_quietly(), name="history-writer")

    async def _write_quietly(self) -> None:
        try:
            await self.flush()
        except Exception as exc:
            if not self._failing:
                self._failing = True
                logger.warning("history writes failing, rows kept to retry: %s", _reason(exc))
            if self._pending_rows and self._timer is None and not self._closed:
                loop = asyncio.get_running_loop()
                self._timer = loop.call_later(self._delay_s, self._write_in_background)

    def _put_back(self, rows: dict[Table, list[Row]], count: int) -> None:
        # The failed rows go first again: they are the older ones.
        for table, newer in self._pending.items():
            rows.setdefault(table, []).extend(newer)
        self._pending = rows
        self._pending_rows += count
        self._bound()

    def _bound(self) -> None:
        excess = self._pending_rows - self._max_rows
        if excess <= 0:
            return
        before = self.dropped
        for rows in self._pending.values():
            cut = min(excess, len(rows))
            del rows[:cut]
            excess -= cut
            self._pending_rows -= cut
            self.dropped += cut
            if not excess:
                break
        # Once, then every further 10,000: a long outage must not flood the log.
        if before == 0 or before // 10_000 != self.dropped // 10_000:
            logger.warning("history rows dropped while storage lags: %d so far", self.dropped)


def insert_statement(conn: Connection, table: Table, *, skip_duplicates: bool) -> Insert:
    """INSERT into `table`; with `skip_duplicates`, one that leaves out rows hitting a unique
    key. Both dialect families we run on (SQLite for memory/sqlite/turso, PostgreSQL)
    spell that ON CONFLICT DO NOTHING."""
    return _insert_for(conn.dialect.name, table, skip_duplicates=skip_duplicates)


def _insert_for(dialect_name: str, table: Table, *, skip_duplicates: bool) -> Insert:
    if not skip_duplicates:
        return table.insert()
    if dialect_name == "postgresql":
        return postgresql.insert(table).on_conflict_do_nothing()
    return sqlite.insert(table).on_conflict_do_nothing()


Convert = Callable[[Any], Any]

# The most rows one SQLite INSERT carries (a power of two).
MULTI_ROW_MAX = 512
# SQLite's bound on one statement's parameters before 3.32, where the driver cannot say.
SQLITE_VARIABLES_FALLBACK = 999


@dataclass(frozen=True, slots=True)
class _DriverInsert:
    """An INSERT compiled once for one dialect, column set and number of rows: the
    driver's SQL and, in the order its parameters take, each column with the conversion
    its value needs."""

    sql: str
    positional: bool
    columns: tuple[tuple[str, Convert | None], ...]

    def parameters(self, rows: list[Row]) -> list[Any]:
        columns = self.columns
        if not self.positional:
            return [{n: row[n] if f is None else f(row[n]) for n, f in columns} for row in rows]
        if any(f is not None for _, f in columns):
            return [tuple(row[n] if f is None else f(row[n]) for n, f in columns) for row in rows]
        # Nothing to convert (the usual case: numbers and short text): one C call a row.
        take = operator.itemgetter(*(n for n, _ in columns))
        return [take(row) for row in rows] if len(columns) > 1 else [(take(r),) for r in rows]

    def flat_parameters(self, rows: list[Row]) -> tuple[Any, ...]:
        """The parameters of several rows in one VALUES list, row after row."""
        return tuple(itertools.chain.from_iterable(self.parameters(rows)))


@functools.lru_cache(maxsize=256)
def _compiled(
    dialect: Dialect, table: Table, names: tuple[str, ...], skip_duplicates: bool, rows: int = 1
) -> _DriverInsert | None:
    """The INSERT for `rows` rows at once; None where the SQL does not have the one
    VALUES group of question marks it is spelled with on SQLite (then rows go one a step)."""
    statement = _insert_for(dialect.name, table, skip_duplicates=skip_duplicates)
    compiled = statement.compile(dialect=dialect, column_keys=list(names))
    order = compiled.positiontup
    columns = tuple(
        (name, table.c[name].type.dialect_impl(dialect).bind_processor(dialect))
        for name in (names if order is None else order)
    )
    sql = str(compiled)
    if rows > 1:
        group = "(" + ", ".join("?" * len(columns)) + ")"
        if order is None or sql.count(group) != 1:
            return None
        sql = sql.replace(group, ", ".join([group] * rows))
    return _DriverInsert(sql, order is not None, columns)


def _insert_many(conn: Connection, table: Table, rows: list[Row], *, skip_duplicates: bool) -> None:
    """Rows straight to the driver, each statement compiled once per column set: SQLAlchemy's
    own executemany rebuilt every row's parameters in Python, most of the storage thread's
    time at a thousand connections (py-spy). On SQLite, many rows go in each INSERT
    (storage/statement_sizes.py): every statement run hands the interpreter lock back and
    forth with the event loop (kit/gil_handover.py), and an executemany runs one per row."""
    names = tuple(rows[0])
    dialect = conn.dialect
    if dialect.name == "sqlite" and len(rows) > 1:
        start = 0
        largest = _rows_per_statement(conn, len(names))
        powers_of_two = [largest >> shift for shift in range(largest.bit_length())]
        for size in statement_sizes(len(rows), powers_of_two):
            many = _compiled(dialect, table, names, skip_duplicates, size)
            if many is None:
                break  # not the SQL we expect: the rest one a step, as on other dialects
            chunk = rows[start : start + size]
            conn.exec_driver_sql(many.sql, many.flat_parameters(chunk))
            start += size
        rows = rows[start:]
        if not rows:
            return
    compiled = _compiled(dialect, table, names, skip_duplicates)
    assert compiled is not None  # one row's INSERT is always the plain compiled one
    conn.exec_driver_sql(compiled.sql, compiled.parameters(rows))


def _rows_per_statement(conn: Connection, columns: int) -> int:
    """The most rows one INSERT may carry: a power of two within SQLite's bound on a
    statement's parameters and within MULTI_ROW_MAX."""
    variables = SQLITE_VARIABLES_FALLBACK
    driver = conn.connection.driver_connection
    getlimit = getattr(driver, "getlimit", None)  # Python 3.11's sqlite3; not every driver
    if getlimit is not None:
        variables = getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)
    fits = max(1, min(MULTI_ROW_MAX, variables // max(1, columns)))
    return 1 << (fits.bit_length() - 1)


def _insert(conn: Connection, *, table: Table, row: Row, skip: bool) -> None:
    conn.execute(insert_statement(conn, table, skip_duplicates=skip), row)


def _by_columns(rows: list[Row]) -> list[list[Row]]:
    """Rows split by the columns they name: one executemany needs the same for all."""
    groups: dict[tuple[str, ...], list[Row]] = {}
    for row in rows:
        groups.setdefault(tuple(row), []).append(row)
    return list(groups.values())


def _is_outage(exc: BaseException) -> bool:
    """Storage cannot write now (down, locked, full, its schema missing), as opposed to
    one row it will never take."""
    if isinstance(exc, DBAPIError):
        return exc.connection_invalidated or isinstance(
            exc, OperationalError | InterfaceError | ProgrammingError | InternalError
        )
    return isinstance(exc, OSError | TimeoutError)


def _reason(exc: BaseException) -> str:
    # The exception's type and first line: a driver's message can run to a whole query.
    first = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {first}"[:300]
