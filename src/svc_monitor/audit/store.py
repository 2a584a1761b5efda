"""The ACL audit trail: one row per ACL LOG entry, kept after the server forgets it.

The server groups repeated denials into one entry and counts them, so the same entry
comes back on later polls with a larger count and a later last-updated time; its row is
updated, never duplicated. Identity of an entry:

- Valkey and Redis 7.2+: (`entry-id`, `timestamp-created`), exact (entry ids restart
  with the server, the creation time tells two runs apart).
- Redis 6.2/7.0 send neither, only `age-seconds` since the last update (client-info is
  replaced on every grouped denial, so it cannot identify anything). There the entry is
  (username, reason, context, object) plus time: an unchanged entry matches the row with
  the same count whose last-updated time (now - age) is within `_TOLERANCE_MS`; a grown
  entry matches the newest remaining row of that tuple with a smaller count whose
  last-updated time it could have reached, the server grouping denials at most
  `_GROUPING_MS` apart (so at most that much per extra count). Anything else is new.

`record` answers the occurrences (entries new to the store, or whose count grew), so the
audit poll publishes each denial once with the same identity rules.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    BigInteger,
    Column,
    Connection,
    Float,
    Row,
    String,
    Text,
    bindparam,
    func,
    select,
    update,
)
from sqlalchemy.sql.elements import ColumnElement

from svc_monitor.engine.acl import AclLogEntry
from svc_monitor.storage.database import Database
from svc_monitor.storage.history import history_table

# Redis/Valkey ACL_LOG_GROUPING_MAX_TIME_DELTA: denials this close are counted in one entry.
_GROUPING_MS = 60_000
# now - age jitters by the round trip and the millisecond rounding of age-seconds.
_TOLERANCE_MS = 1_000

# captured_at: last time the row changed, epoch ms
acl_entries = history_table(
    "acl_entries",
    Column("entry_id", BigInteger),  # None on Redis < 7.2
    Column("count", BigInteger, nullable=False),
    Column("reason", String(32), nullable=False),
    Column("context", String(64), nullable=False),
    Column("object", Text, nullable=False),
    Column("username", String(256), nullable=False),
    Column("age_seconds", Float, nullable=False),
    Column("client_info", Text, nullable=False),
    Column("timestamp_created", BigInteger, nullable=False),  # epoch ms (estimated on old Redis)
    Column("timestamp_last_updated", BigInteger, nullable=False),  # epoch ms
)

HISTORY_TABLES = (acl_entries,)


@dataclass(frozen=True, slots=True)
class AuditFilter:
    """Which rows of one connection a read is about."""

    connection_id: str
    username: str | None = None
    reason: str | None = None
    since: int | None = None
    until: int | None = None

    def where(self) -> list[ColumnElement[bool]]:
        t = acl_entries.c
        clauses: list[ColumnElement[bool]] = [t.connection_id == self.connection_id]
        if self.username is not None:
            clauses.append(t.username == self.username)
        if self.reason is not None:
            clauses.append(t.reason == self.reason)
        if self.since is not None:
            clauses.append(t.captured_at >= self.since)
        if self.until is not None:
            clauses.append(t.captured_at <= self.until)
        return clauses


class AuditStore:
    """Upserts ACL LOG entries and answers audit queries."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def record(
        self, connection_id: str, entries: Sequence[AclLogEntry], *, captured_at: int
    ) -> list[AclLogEntry]:
        """Insert new entries, update grown ones, all in one transaction.

        Returns the occurrences: the entries not stored before and those whose count grew.
        """
        if not entries:
            return []
        return await self._db.run(lambda conn: _record(conn, connection_id, entries, captured_at))

    async def entries(self, where: AuditFilter, *, limit: int, offset: int) -> Sequence[Row[Any]]:
        t = acl_entries.c
        query = (
            select(acl_entries)
            .where(*where.where())
            .order_by(t.captured_at.desc(), t.id.desc())
            .limit(limit)
            .offset(offset)
        )
        return await self._db.fetch_all(query)

    async def grouped(self, where: AuditFilter, column: str) -> Sequence[Row[Any]]:
        """(value, rows, events) per value of `column`."""
        t = acl_entries.c
        query = (
            select(t[column].label("key"), func.count(), func.sum(t.count))
            .where(*where.where())
            .group_by(t[column])
        )
        return await self._db.fetch_all(query)

    async def totals(self, where: AuditFilter) -> Row[Any] | None:
        """(rows, events, distinct users, earliest, latest) of the filtered rows."""
        t = acl_entries.c
        query = select(
            func.count(),
            func.sum(t.count),
            func.count(t.username.distinct()),
            func.min(t.timestamp_created),
            func.max(t.timestamp_last_updated),
        ).where(*where.where())
        return await self._db.fetch_one(query)


def _record(
    conn: Connection, connection_id: str, entries: Sequence[AclLogEntry], captured_at: int
) -> list[AclLogEntry]:
    rows = [_row(e, captured_at) for e in entries]
    exact = [i for i, r in enumerate(rows) if r["entry_id"] is not None]
    estimated = [i for i, r in enumerate(rows) if r["entry_id"] is None]
    # Both matchers answer in the order they were given, so the indexes line up.
    pairs = _match_exact(conn, connection_id, [rows[i] for i in exact]) + _match_estimated(
        conn, connection_id, [rows[i] for i in estimated]
    )
    inserts: list[dict[str, Any]] = []
    updates: list[dict[str, Any]] = []
    occurred: list[int] = []
    for index, (new, old) in zip(exact + estimated, pairs, strict=True):
        if old is None:
            inserts.append({**new, "connection_id": connection_id, "captured_at": captured_at})
            occurred.append(index)
        elif (
            new["count"] != old["count"]
            or new["timestamp_last_updated"] > old["timestamp_last_updated"]
        ):
            updates.append({**new, "row_id": old["id"], "captured_at": captured_at})
            if new["count"] > old["count"]:
                occurred.append(index)
    if inserts:
        conn.execute(acl_entries.insert(), inserts)
    if updates:
        t = acl_entries.c
        conn.execute(
            update(acl_entries)
            .where(t.id == bindparam("row_id"))
            .values(
                count=bindparam("count"),
                age_seconds=bindparam("age_seconds"),
                client_info=bindparam("client_info"),
                timestamp_last_updated=bindparam("timestamp_last_updated"),
                captured_at=bindparam("captured_at"),
            ),
            [{k: u[k] for k in _UPDATED} for u in updates],
        )
    return [entries[i] for i in sorted(occurred)]  # the server's order, newest first


_UPDATED = (
    "row_id",
    "count",
    "age_seconds",
    "client_info",
    "timestamp_last_updated",
    "captured_at",
)

# (entry as a row, the stored row it updates or None). Dicts: a Row's .count is tuple.count.
_Pair = tuple[dict[str, Any], dict[str, Any] | None]


def _row(entry: AclLogEntry, captured_at: int) -> dict[str, Any]:
    last = entry.timestamp_last_updated
    if last is None:
        last = captured_at - round(entry.age_seconds * 1000)
    return {
        "entry_id": entry.entry_id if entry.timestamp_created is not None else None,
        "count": entry.count,
        "reason": entry.reason,
        "context": entry.context,
        "object": entry.object,
        "username": entry.username,
        "age_seconds": entry.age_seconds,
        "client_info": entry.client_info,
        "timestamp_created": entry.timestamp_created if entry.timestamp_created else last,
        "timestamp_last_updated": last,
    }


def _match_exact(conn: Connection, connection_id: str, rows: list[dict[str, Any]]) -> list[_Pair]:
    if not rows:
        return []
    t = acl_entries.c
    stored = conn.execute(
        select(acl_entries).where(
            t.connection_id == connection_id, t.entry_id.in_({r["entry_id"] for r in rows})
        )
    ).mappings()
    by_key = {(s["entry_id"], s["timestamp_created"]): dict(s) for s in stored}
    return [(r, by_key.get((r["entry_id"], r["timestamp_created"]))) for r in rows]


def _match_estimated(
    conn: Connection, connection_id: str, rows: list[dict[str, Any]]
) -> list[_Pair]:
    if not rows:
        return []
    t = acl_entries.c
    # A stored row can only match an entry updated after it, so older rows never matter.
    horizon = min(r["timestamp_last_updated"] for r in rows) - _TOLERANCE_MS
    stored = [
        dict(s)
        for s in conn.execute(
            select(acl_entries)
            .where(
                t.connection_id == connection_id,
                t.entry_id.is_(None),
                t.timestamp_last_updated >= horizon - _GROUPING_MS * max(r["count"] for r in rows),
            )
            .order_by(t.timestamp_last_updated.desc())
        ).mappings()
    ]
    claimed: set[int] = set()
    matches: dict[int, dict[str, Any]] = {}
    # Unchanged entries first, so a grown one never takes a row that is still in the log.
    for index, row in enumerate(rows):
        for s in stored:
            if s["id"] not in claimed and _same_tuple(s, row) and _unchanged(s, row):
                claimed.add(s["id"])
                matches[index] = s
                break
    for index, row in enumerate(rows):
        if index in matches:
            continue
        for s in stored:
            if s["id"] not in claimed and _same_tuple(s, row) and _grown(s, row):
                claimed.add(s["id"])
                matches[index] = s
                break
    return [(row, matches.get(index)) for index, row in enumerate(rows)]


def _same_tuple(stored: dict[str, Any], row: dict[str, Any]) -> bool:
    return all(stored[k] == row[k] for k in ("username", "reason", "context", "object"))


def _unchanged(stored: dict[str, Any], row: dict[str, Any]) -> bool:
    drift = abs(stored["timestamp_last_updated"] - row["timestamp_last_updated"])
    return bool(stored["count"] == row["count"] and drift <= _TOLERANCE_MS)


def _grown(stored: dict[str, Any], row: dict[str, Any]) -> bool:
    extra: int = row["count"] - stored["count"]
    gap: int = row["timestamp_last_updated"] - stored["timestamp_last_updated"]
    return extra > 0 and -_TOLERANCE_MS <= gap <= extra * _GROUPING_MS + _TOLERANCE_MS
