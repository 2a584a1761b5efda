"""Stored MONITOR captures and their lines.

`monitor_sessions` holds one row per capture; a running capture's row is updated with each
batch of lines it writes (counts and `heartbeat_at`), so a row left "running" by a process
that died is recognised by its silent heartbeat. `stop_requested_by` lets any replica ask
the one running a capture to stop it. `monitor_lines` holds the lines, numbered from 0 in
each capture (`seq`). Both tables have the `id`, `connection_id` and `captured_at` that
storage/retention.py's LOCAL_RETENTION_DAYS sweep and memory row cap work on.
"""

import json
from collections.abc import Sequence
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Connection,
    Index,
    Integer,
    Row,
    String,
    Table,
    Text,
    UniqueConstraint,
    delete,
    insert,
    select,
    update,
)

from svc_monitor.console.monitor.models import (
    Caps,
    CaptureSession,
    CaptureStatus,
    MonitorLine,
)
from svc_monitor.storage.columns import connection_id_column
from svc_monitor.storage.database import Database
from svc_monitor.storage.history import history_table
from svc_monitor.storage.metadata import metadata

# captured_at: when the capture started.
monitor_sessions = history_table(
    "monitor_sessions",
    Column("ended_at", BigInteger),
    Column("status", String(16), nullable=False),
    Column("duration_ms", Integer, nullable=False),
    Column("max_lines", Integer, nullable=False),
    Column("max_bytes", BigInteger, nullable=False),
    Column("line_count", Integer, nullable=False),
    Column("byte_count", BigInteger, nullable=False),
    Column("end_reason", String(300)),
    Column("requested_by", String(100)),
    Column("redacted", Boolean, nullable=False),
    Column("heartbeat_at", BigInteger, nullable=False),
    Column("stop_requested_by", String(120)),
)

monitor_lines = Table(
    "monitor_lines",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("session_id", Integer, nullable=False),
    connection_id_column(nullable=False),
    Column("captured_at", BigInteger, nullable=False),  # when the line was received
    Column("seq", Integer, nullable=False),
    Column("ts", String(32)),
    Column("ts_ms", BigInteger),
    Column("db", Integer),
    Column("client", String(300)),
    Column("command", String(64)),
    Column("args", Text),  # a JSON list of strings
    Column("arg_count", Integer, nullable=False),
    Column("shortened", Boolean, nullable=False),
    Column("raw", Text),
    Column("size", Integer, nullable=False),
    UniqueConstraint("session_id", "seq"),
    Index("ix_monitor_lines_connection_time", "connection_id", "captured_at"),
)

HISTORY_TABLES = (monitor_sessions, monitor_lines)

# Rows per INSERT: a batch is at most a few thousand lines, and PostgreSQL's limit is
# 32767 bound parameters per statement (15 columns here).
_CHUNK = 1000


class MonitorStore:
    """Writes captures and their lines; reads them back."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def insert_session(
        self,
        connection_id: str,
        *,
        started_at: int,
        caps: Caps,
        requested_by: str | None,
        redacted: bool,
    ) -> CaptureSession:
        values = {
            "connection_id": connection_id,
            "captured_at": started_at,
            "status": CaptureStatus.RUNNING.value,
            "duration_ms": caps.duration_ms,
            "max_lines": caps.max_lines,
            "max_bytes": caps.max_bytes,
            "line_count": 0,
            "byte_count": 0,
            "requested_by": requested_by,
            "redacted": redacted,
            "heartbeat_at": started_at,
        }

        def work(conn: Connection) -> int:
            key = conn.execute(insert(monitor_sessions).values(**values)).inserted_primary_key
            assert key is not None
            return int(key[0])

        session_id = await self._db.run(work)
        return CaptureSession(
            id=session_id,
            connection_id=connection_id,
            status=CaptureStatus.RUNNING,
            started_at=started_at,
            ended_at=None,
            caps=caps,
            line_count=0,
            byte_count=0,
            end_reason=None,
            requested_by=requested_by,
            redacted=redacted,
        )

    async def write_batch(
        self,
        session: CaptureSession,
        lines: Sequence[MonitorLine],
        *,
        captured_at: int,
        line_count: int,
        byte_count: int,
    ) -> str | None:
        """Store lines and the capture's progress in one transaction; who asked (on any
        replica) to stop it, if anyone did."""
        rows = [_line_row(session, line, captured_at) for line in lines]
        sessions = monitor_sessions.c

        def work(conn: Connection) -> str | None:
            for start in range(0, len(rows), _CHUNK):
                conn.execute(insert(monitor_lines), rows[start : start + _CHUNK])
            conn.execute(
                update(monitor_sessions)
                .where(sessions.id == session.id)
                .values(line_count=line_count, byte_count=byte_count, heartbeat_at=captured_at)
            )
            asked = conn.execute(
                select(sessions.stop_requested_by).where(sessions.id == session.id)
            ).scalar()
            return None if asked is None else str(asked)

        return await self._db.run(work)

    async def finish(
        self,
        session_id: int,
        *,
        status: CaptureStatus,
        reason: str,
        ended_at: int,
        line_count: int,
        byte_count: int,
    ) -> None:
        await self._db.execute(
            update(monitor_sessions)
            .where(monitor_sessions.c.id == session_id)
            .values(
                status=status.value,
                end_reason=reason[:300],
                ended_at=ended_at,
                line_count=line_count,
                byte_count=byte_count,
                heartbeat_at=ended_at,
            )
        )

    async def request_stop(self, session_id: int, *, by: str) -> bool:
        """Ask the replica running a capture to stop it; False when it is not running."""
        c = monitor_sessions.c
        changed = await self._db.execute(
            update(monitor_sessions)
            .where(c.id == session_id, c.status == CaptureStatus.RUNNING.value)
            .values(stop_requested_by=by[:120])
        )
        return changed > 0

    async def fail_silent(self, *, heartbeat_before: int, now: int, keep: Sequence[int]) -> int:
        """Mark running captures whose heartbeat stopped as failed; how many."""
        c = monitor_sessions.c
        statement = (
            update(monitor_sessions)
            .where(c.status == CaptureStatus.RUNNING.value, c.heartbeat_at < heartbeat_before)
            .values(
                status=CaptureStatus.FAILED.value,
                ended_at=now,
                end_reason="svc-monitor stopped while capturing",
            )
        )
        if keep:
            statement = statement.where(c.id.not_in(list(keep)))
        return await self._db.execute(statement)

    async def get(self, session_id: int) -> CaptureSession | None:
        row = await self._db.fetch_one(
            select(monitor_sessions).where(monitor_sessions.c.id == session_id)
        )
        return None if row is None else _session(row)

    async def running(self, connection_id: str, *, heartbeat_after: int) -> CaptureSession | None:
        """The capture running on a connection (on any replica), if its heartbeat is recent."""
        c = monitor_sessions.c
        row = await self._db.fetch_one(
            select(monitor_sessions)
            .where(
                c.connection_id == connection_id,
                c.status == CaptureStatus.RUNNING.value,
                c.heartbeat_at >= heartbeat_after,
            )
            .order_by(c.id.desc())
            .limit(1)
        )
        return None if row is None else _session(row)

    async def list_sessions(
        self, connection_id: str, *, limit: int, offset: int
    ) -> list[CaptureSession]:
        """A connection's captures, newest first."""
        c = monitor_sessions.c
        rows = await self._db.fetch_all(
            select(monitor_sessions)
            .where(c.connection_id == connection_id)
            .order_by(c.captured_at.desc(), c.id.desc())
            .limit(limit)
            .offset(offset)
        )
        return [_session(r) for r in rows]

    async def lines(
        self,
        session_id: int,
        *,
        from_seq: int = 0,
        before_seq: int | None = None,
        limit: int,
        command: str | None = None,
    ) -> list[MonitorLine]:
        """Lines from `from_seq` on (before `before_seq`), in order."""
        c = monitor_lines.c
        query = select(monitor_lines).where(c.session_id == session_id, c.seq >= from_seq)
        if before_seq is not None:
            query = query.where(c.seq < before_seq)
        if command is not None:
            query = query.where(c.command == command.upper())
        rows = await self._db.fetch_all(query.order_by(c.seq).limit(limit))
        return [_line(r) for r in rows]

    async def delete(self, session_id: int) -> bool:
        """Delete a capture that is not running, and its lines; False when there is none."""
        c = monitor_sessions.c

        def work(conn: Connection) -> bool:
            gone = conn.execute(
                delete(monitor_sessions).where(
                    c.id == session_id, c.status != CaptureStatus.RUNNING.value
                )
            ).rowcount
            if gone:
                conn.execute(delete(monitor_lines).where(monitor_lines.c.session_id == session_id))
            return bool(gone)

        return await self._db.run(work)


def _line_row(session: CaptureSession, line: MonitorLine, captured_at: int) -> dict[str, Any]:
    return {
        "session_id": session.id,
        "connection_id": session.connection_id,
        "captured_at": captured_at,
        "seq": line.seq,
        "ts": line.ts,
        "ts_ms": line.ts_ms,
        "db": line.db,
        "client": line.client[:300] if line.client else None,
        "command": line.command,
        "args": json.dumps(list(line.args)) if line.command is not None else None,
        "arg_count": line.arg_count,
        "shortened": line.shortened,
        "raw": line.raw,
        "size": line.size,
    }


def _line(row: Row[Any]) -> MonitorLine:
    return MonitorLine(
        seq=row.seq,
        ts=row.ts,
        ts_ms=row.ts_ms,
        db=row.db,
        client=row.client,
        command=row.command,
        args=tuple(json.loads(row.args)) if row.args else (),
        arg_count=row.arg_count,
        shortened=bool(row.shortened),
        raw=row.raw,
        size=row.size,
    )


def _session(row: Row[Any]) -> CaptureSession:
    return CaptureSession(
        id=row.id,
        connection_id=row.connection_id,
        status=CaptureStatus(row.status),
        started_at=row.captured_at,
        ended_at=row.ended_at,
        caps=Caps(duration_ms=row.duration_ms, max_lines=row.max_lines, max_bytes=row.max_bytes),
        line_count=row.line_count,
        byte_count=row.byte_count,
        end_reason=row.end_reason,
        requested_by=row.requested_by,
        redacted=bool(row.redacted),
    )
