"""Stored spans: one row per (trace_id, span_id), and the reads of the AI Traces view.

`trace_spans` is a history table like the others as far as retention is concerned
(storage/retention.py): `id` ascends with insertion (the memory row cap trims by it)
and `captured_at` is the row's time, here the span's start in epoch ms, so one index
serves both the trace list (newest traces first, by start) and the retention sweep.
There is no `connection_id`: a span belongs to an application, not to an instance.

A span sent twice (an SDK retry, a collector replaying a batch) is one row: the
unique key (trace_id, span_id) is the upsert's conflict target and the later copy
wins. Ids are lowercase hex; times are unix nanoseconds (signed 64-bit, good until
2262); attributes, events and resource attributes are JSON text.
"""

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Any, Literal

from sqlalchemy import (
    BigInteger,
    Column,
    Connection,
    Index,
    Integer,
    Row,
    SmallInteger,
    String,
    Table,
    Text,
    UniqueConstraint,
    bindparam,
    case,
    func,
    select,
)
from sqlalchemy.engine.interfaces import Dialect

from svc_monitor.storage.database import Database
from svc_monitor.storage.metadata import metadata
from svc_monitor.storage.statement_sizes import statement_sizes
from svc_monitor.traces.convert import COLUMNS, SpanRow

trace_spans = Table(
    "trace_spans",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("trace_id", String(32), nullable=False),
    Column("span_id", String(16), nullable=False),
    Column("parent_span_id", String(16)),  # null: a root span
    Column("name", Text, nullable=False),
    Column("scope_name", Text, nullable=False),
    Column("service_name", Text),  # the resource's service.name; null when it had none
    Column("kind", SmallInteger, nullable=False),  # OTLP SpanKind, 0-5
    Column("start_time_unix_nano", BigInteger, nullable=False),
    Column("end_time_unix_nano", BigInteger, nullable=False),
    Column("captured_at", BigInteger, nullable=False),  # the start in epoch ms
    Column("duration_ns", BigInteger, nullable=False),
    Column("status_code", SmallInteger, nullable=False),  # 0 unset, 1 ok, 2 error
    Column("status_message", Text),
    Column("attributes", Text, nullable=False),  # JSON object
    Column("events", Text, nullable=False),  # JSON [{name, timeUnixNano, attributes}]
    Column("resource_attributes", Text, nullable=False),  # JSON object
    UniqueConstraint("trace_id", "span_id"),
    Index("ix_trace_spans_captured_at", "captured_at"),
)

HISTORY_TABLES = (trace_spans,)

# The service filter's menu reads this many of the newest spans at most.
SERVICE_SCAN_SPANS = 50_000
STATUS_OK = 1
STATUS_ERROR = 2

TraceStatus = Literal["ok", "error", "unset"]


@dataclass(frozen=True, slots=True, kw_only=True)
class TraceQuery:
    """Which traces to list: those that started in [since, until] (epoch ms)."""

    since: int
    until: int | None = None
    service: str | None = None  # at least one span from this service.name
    status: TraceStatus | None = None
    min_duration_ms: float | None = None
    limit: int = 100


def _postgres_upsert(dialect: Dialect) -> str:
    """The upsert of one COLUMNS row, in the driver's own SQL (asyncpg pipelines many)."""
    from sqlalchemy.dialects.postgresql import insert

    statement = insert(trace_spans).values({c: bindparam(c) for c in COLUMNS})
    statement = statement.on_conflict_do_update(
        index_elements=["trace_id", "span_id"],
        set_={c: statement.excluded[c] for c in COLUMNS[2:]},
    )
    compiled = statement.compile(dialect=dialect)
    # Rows are tuples in COLUMNS order: the placeholders must be in that order too.
    assert tuple(compiled.positiontup or ()) == COLUMNS, compiled.positiontup
    return str(compiled)


# SQLite (and libSQL): rows per INSERT (storage/statement_sizes.py); the largest, 200, binds
# 3,200 parameters, well under SQLite's 32,766. 100 is in the set because exports of 100
# spans, and group commits of several, are common.
_STATEMENT_SIZES = (200, 100, 64, 32, 16, 8, 4, 2, 1)
_SQLITE_HEAD = f"INSERT INTO trace_spans ({', '.join(COLUMNS)}) VALUES "
_SQLITE_ROW = "(" + ", ".join("?" * len(COLUMNS)) + ")"
_SQLITE_TAIL = " ON CONFLICT (trace_id, span_id) DO UPDATE SET " + ", ".join(
    f"{c} = excluded.{c}" for c in COLUMNS[2:]
)


@functools.lru_cache(maxsize=16)
def _sqlite_upsert(rows: int) -> str:
    return _SQLITE_HEAD + ", ".join([_SQLITE_ROW] * rows) + _SQLITE_TAIL


class TraceStore:
    """Writes spans and reads traces."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._postgres_sql: str | None = None

    async def upsert(self, rows: list[SpanRow]) -> None:
        """All `rows` in one transaction; a (trace_id, span_id) already stored is replaced.

        The rows go to the driver as they are, bypassing SQLAlchemy's per-row parameter
        handling, which cost more than SQLite's own insert (22 against 9 us per span,
        measured with 100-span batches). On SQLite, up to 200 rows per statement: the
        storage thread then releases the GIL once per statement instead of once per row,
        and convoys less with the event loop converting the next request meanwhile.
        """
        if not rows:
            return
        # One statement may not touch a row twice (PostgreSQL refuses): the last copy wins.
        unique = {(r[0], r[1]): r for r in rows}
        batch = list(unique.values()) if len(unique) < len(rows) else rows

        def write(conn: Connection) -> None:
            if conn.dialect.name == "postgresql":
                if self._postgres_sql is None:
                    self._postgres_sql = _postgres_upsert(conn.dialect)
                conn.exec_driver_sql(self._postgres_sql, batch)
                return
            first = 0
            for size in statement_sizes(len(batch), _STATEMENT_SIZES):
                chunk = batch[first : first + size]
                first += size
                conn.exec_driver_sql(_sqlite_upsert(size), tuple(chain.from_iterable(chunk)))

        await self._db.run(write)

    async def traces(self, query: TraceQuery) -> Sequence[Row[Any]]:
        """One summary row per trace, newest start first."""
        s = trace_spans.c
        started = s.captured_at >= query.since
        if query.until is not None:
            started = started & (s.captured_at <= query.until)
        candidates = select(s.trace_id).where(started)
        if query.service is not None:
            candidates = candidates.where(s.service_name == query.service)
        is_root = s.parent_span_id.is_(None)
        start_ms = func.min(s.captured_at)
        start_ns = func.min(s.start_time_unix_nano)
        end_ns = func.max(s.end_time_unix_nano)
        errors = func.sum(case((s.status_code == STATUS_ERROR, 1), else_=0))
        oks = func.sum(case((s.status_code == STATUS_OK, 1), else_=0))
        statement = (
            select(
                s.trace_id,
                # The root's name and service; a trace whose root is not stored (yet)
                # shows its alphabetically first span's.
                func.coalesce(func.max(case((is_root, s.name))), func.min(s.name)).label(
                    "root_name"
                ),
                func.coalesce(
                    func.max(case((is_root, s.service_name))), func.min(s.service_name)
                ).label("service_name"),
                start_ms.label("start_ms"),
                start_ns.label("start_ns"),
                end_ns.label("end_ns"),
                func.count().label("span_count"),
                errors.label("errors"),
                oks.label("oks"),
            )
            .where(s.trace_id.in_(candidates))
            .group_by(s.trace_id)
            .having(start_ms >= query.since)
        )
        if query.until is not None:
            statement = statement.having(start_ms <= query.until)
        if query.status == "error":
            statement = statement.having(errors > 0)
        elif query.status == "ok":
            statement = statement.having(errors == 0, oks > 0)
        elif query.status == "unset":
            statement = statement.having(errors == 0, oks == 0)
        if query.min_duration_ms is not None:
            statement = statement.having(end_ns - start_ns >= int(query.min_duration_ms * 1e6))
        statement = statement.order_by(start_ms.desc(), s.trace_id).limit(query.limit)
        return await self._db.fetch_all(statement)

    async def spans(self, trace_id: str, *, limit: int) -> Sequence[Row[Any]]:
        """The spans of one trace, earliest first (at most `limit`)."""
        s = trace_spans.c
        statement = (
            select(trace_spans)
            .where(s.trace_id == trace_id)
            .order_by(s.start_time_unix_nano, s.span_id)
            .limit(limit)
        )
        return await self._db.fetch_all(statement)

    async def count_spans(self, trace_id: str) -> int:
        statement = select(func.count()).where(trace_spans.c.trace_id == trace_id)
        row = await self._db.fetch_one(statement)
        return int(row[0]) if row is not None else 0

    async def services(self, *, since: int, limit: int) -> list[str]:
        """The service names among the newest spans that started since `since`,
        alphabetically. Reads at most the newest SERVICE_SCAN_SPANS spans: a filter
        menu must not cost a scan of a busy week."""
        s = trace_spans.c
        newest = (
            select(s.service_name)
            .where(s.captured_at >= since)
            .order_by(s.captured_at.desc())
            .limit(SERVICE_SCAN_SPANS)
            .subquery()
        )
        statement = (
            select(newest.c.service_name)
            .where(newest.c.service_name.is_not(None))
            .distinct()
            .order_by(newest.c.service_name)
            .limit(limit)
        )
        return [str(row[0]) for row in await self._db.fetch_all(statement)]
