"""Slow-log and command-log history (fed by the polls) and the live log routes.

History outlives the server's ring buffer: each poll reads the newest entries and
stores the ones past a per-(connection, node, log) high-water mark, the newest
entry stored so far. Ids grow for the life of a server process (SLOWLOG RESET
empties the log but keeps counting); a restart starts them again at 0. So an
entry is new when its id passes the mark or it started after it, and a reply
whose newest id is below the mark, or whose entry with the mark's id started at
another time, comes from a new server lifetime: all of it is new. The store's
unique key on (id, start time) backs this up, so nothing is ever stored twice.
"""

import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from sqlalchemy import Row

from svc_monitor.connections.models import CommandUnavailable, Connection
from svc_monitor.connections.service import ConnectionService
from svc_monitor.engine.capabilities import is_refusal
from svc_monitor.engine.client import EngineClient
from svc_monitor.engine.errors import EngineError
from svc_monitor.engine.slowlog import FETCH_COUNT, LogEntry, LogType, parse_log_reply
from svc_monitor.errors import NotSupported, Unavailable
from svc_monitor.events import now_ms
from svc_monitor.pipe.facts import PatternCount
from svc_monitor.slowlog.command_patterns import analyze
from svc_monitor.slowlog.models import EntryFilter
from svc_monitor.slowlog.schemas import (
    CommandLogEntryRead,
    LogEntryRead,
    PatternAnalysis,
    StoredCommandLogEntry,
    StoredLogEntry,
)
from svc_monitor.slowlog.store import SlowlogStore, decode_args

logger = logging.getLogger(__name__)

COMMANDLOG_UNSUPPORTED = (
    "Failed to get commandlog: COMMANDLOG not supported on this database version"
)


class CommandLogNotSupported(NotSupported):
    """COMMANDLOG needs Valkey 8.1 or newer (and the right to run it)."""


@dataclass(frozen=True, slots=True)
class Mark:
    """The newest entry stored of one log of one node."""

    entry_id: int
    started_at_ms: int


_MarkKey: TypeAlias = tuple[str, str, LogType | None]


def select_new(entries: Sequence[LogEntry], mark: Mark | None) -> tuple[list[LogEntry], bool]:
    """The entries past `mark`, and whether the reply comes from a new server lifetime."""
    if mark is None or not entries:
        return list(entries), False
    newest = max(e.id for e in entries)
    same_id = next((e for e in entries if e.id == mark.entry_id), None)
    restarted = newest < mark.entry_id or (
        same_id is not None and same_id.started_at_ms != mark.started_at_ms
    )
    if restarted:
        return list(entries), True
    return [
        e for e in entries if e.id > mark.entry_id or e.started_at_ms > mark.started_at_ms
    ], False


# The entries a read saw, told apart cheaply: ids only grow within a server lifetime and
# a restart starts them again, so (newest id, its start, how many) changes with the log.
_LogKey: TypeAlias = tuple[int, int, int]
_PatternMemo: TypeAlias = dict[tuple[str, LogType | None], tuple[_LogKey, tuple[PatternCount, ...]]]


class SlowlogService:
    """Stores polled log entries once each; answers live, pattern and history reads."""

    def __init__(self, store: SlowlogStore, connections: ConnectionService) -> None:
        self._store = store
        self._connections = connections
        self._marks: dict[_MarkKey, Mark | None] = {}
        # The last patterns worked out per (connection, log): a quiet log is not regrouped.
        self._patterns: _PatternMemo = {}
        # COMMANDLOG resets made through us, per connection: an emptied log is read again
        # even though its byte counter did not grow (polling/size_log_gate.py).
        self._commandlog_resets: Counter[str] = Counter()

    # --- fed by the polls ---

    async def record(
        self,
        connection_id: str,
        *,
        node: str,
        log_type: LogType | None,
        entries: Sequence[LogEntry],
    ) -> int:
        """Store the entries not seen yet; how many were new."""
        key = (connection_id, node, log_type)
        new, restarted = select_new(entries, await self._mark(key))
        if restarted:
            logger.info(
                "%s log of %s (%s) starts again: the server restarted",
                log_type or "slow", connection_id, node,
            )  # fmt: skip
        # Room first, then the rows: a thousand polls that each queued and then waited
        # would overfill the queue before the first of them had waited.
        await self._store.keep_up()
        self._store.add(
            connection_id, node=node, log_type=log_type, entries=new, captured_at=now_ms()
        )
        if entries:
            newest = max(entries, key=lambda e: e.id)
            self._marks[key] = Mark(newest.id, newest.started_at_ms)
        return len(new)

    async def missed_some(
        self,
        connection_id: str,
        *,
        node: str,
        log_type: LogType | None,
        entries: Sequence[LogEntry],
    ) -> bool:
        """Whether entries between the newest stored and the oldest of `entries` were not
        read: a burst outran one read. Only known once something is stored; a first read,
        or one from a new server lifetime, starts afresh rather than reaching back."""
        mark = await self._mark((connection_id, node, log_type))
        if mark is None or not entries:
            return False
        _, restarted = select_new(entries, mark)
        return not restarted and min(e.id for e in entries) > mark.entry_id + 1

    async def _mark(self, key: _MarkKey) -> Mark | None:
        if key not in self._marks:
            connection_id, node, log_type = key
            row = await self._store.newest(connection_id, node=node, log_type=log_type)
            self._marks[key] = None if row is None else Mark(row.entry_id, row.started_at)
        return self._marks[key]

    async def durations_since(
        self, connection_id: str, *, since_ms: int, commands: frozenset[str], limit: int
    ) -> list[tuple[str, str | None, int]]:
        """(command, first argument, µs) of each stored slow-log entry of these commands
        started since `since_ms`, newest first, at most `limit`: every node's, as stored
        (the per-index search latency reads them, docs/features/vector-search.md)."""
        timed = await self.timed_durations(
            connection_id, since_ms=since_ms, until_ms=None, commands=commands, limit=limit
        )
        return [(command, first, duration) for _, command, first, duration in timed]

    async def timed_durations(
        self,
        connection_id: str,
        *,
        since_ms: int,
        until_ms: int | None,
        commands: frozenset[str],
        limit: int,
    ) -> list[tuple[int, str, str | None, int]]:
        """(start ms, command, first argument, µs) of each stored slow-log entry of these
        commands started within the window, newest first, at most `limit`."""
        rows = await self._store.durations_since(
            connection_id, since=since_ms, until=until_ms, commands=commands, limit=limit
        )
        found: list[tuple[int, str, str | None, int]] = []
        for row in rows:
            args = decode_args(row.args)
            first = args[1] if len(args) > 1 else None
            found.append((int(row.started_at), row.command, first, int(row.duration)))
        return found

    def forget(self, connection_id: str) -> None:
        for key in [k for k in self._marks if k[0] == connection_id]:
            del self._marks[key]
        for memo in [k for k in self._patterns if k[0] == connection_id]:
            del self._patterns[memo]

    def pattern_counts(
        self, connection_id: str, log_type: LogType | None, entries: Sequence[LogEntry]
    ) -> tuple[PatternCount, ...]:
        """The entries grouped as the patterns view groups them (command_patterns.py), for
        the facts the log polls hand to the pipe.

        For large-request/large-reply the entry's third field, and so the average, is a
        size in bytes, as in the patterns API. Over the newest FETCH_COUNT only, as any
        poll reads, whether or not a catch-up read brought more."""
        entries = entries[:FETCH_COUNT]  # newest first, as the server answers
        if not entries:
            return ()
        newest = max(entries, key=lambda e: e.id)
        key = (newest.id, newest.started_at_ms, len(entries))
        cached = self._patterns.get((connection_id, log_type))
        if cached is not None and cached[0] == key:
            return cached[1]
        counts = tuple(
            PatternCount(
                pattern=p.pattern,
                count=p.count,
                avg_duration_us=p.avgDuration,
                percentage=p.percentage,
            )
            for p in analyze(entries, analyzed_at=0).patterns
        )
        self._patterns[(connection_id, log_type)] = (key, counts)
        return counts

    # --- live reads ---

    async def slowlog(self, connection: Connection, *, count: int) -> list[LogEntryRead]:
        await self.require_slow_log(connection)
        reply = await self._live(connection, "get slowlog", "SLOWLOG", "GET", count)
        return [_live_entry(e) for e in parse_log_reply(reply)]

    async def slowlog_length(self, connection: Connection) -> int:
        await self.require_slow_log(connection)
        return int(await self._live(connection, "get slowlog length", "SLOWLOG", "LEN"))

    async def reset_slowlog(self, connection: Connection) -> None:
        await self.require_slow_log(connection)
        await self._live(connection, "reset slowlog", "SLOWLOG", "RESET")

    async def require_slow_log(self, connection: Connection) -> None:
        """CommandUnavailable (501, with why) when detection found SLOWLOG missing: renamed,
        disabled by a managed provider, or denied to this connection's user. History is
        refused too, as COMMANDLOG's is: nothing is polled into it on such a connection."""
        await self._connections.require_live_feature(connection, "slow_log")

    async def commandlog(
        self, connection: Connection, *, count: int, log_type: LogType
    ) -> list[CommandLogEntryRead]:
        await self.require_command_log(connection)
        reply = await self._live(connection, "get commandlog", "COMMANDLOG", "GET", count, log_type)
        return [
            CommandLogEntryRead(**_live_entry(e).model_dump(), type=log_type)
            for e in parse_log_reply(reply)
        ]

    async def commandlog_length(self, connection: Connection, *, log_type: LogType) -> int:
        await self.require_command_log(connection)
        reply = await self._live(connection, "get commandlog length", "COMMANDLOG", "LEN", log_type)
        return int(reply)

    async def reset_commandlog(self, connection: Connection, *, log_type: LogType) -> None:
        await self.require_command_log(connection)
        await self._live(connection, "reset commandlog", "COMMANDLOG", "RESET", log_type)
        self._commandlog_resets[connection.id] += 1

    def commandlog_resets(self, connection_id: str) -> int:
        return self._commandlog_resets[connection_id]

    async def require_command_log(self, connection: Connection) -> None:
        """CommandLogNotSupported when the engine is known to lack COMMANDLOG.

        An engine that cannot be reached right now is not refused here: history stays
        readable, and a live read fails on its own with 503.
        """
        seen = self._connections.last_seen(connection)
        if seen is None or seen.identity is None:
            seen = await self._connections.check(connection)
        identity = seen.identity
        if identity is not None and not identity.capabilities.has_command_log:
            raise CommandLogNotSupported(COMMANDLOG_UNSUPPORTED)

    # --- history ---

    async def patterns(
        self, connection: Connection, *, count: int, log_type: LogType | None
    ) -> PatternAnalysis:
        """Pattern analysis over the newest `count` stored entries."""
        if log_type is not None:
            await self.require_command_log(connection)
        else:
            await self.require_slow_log(connection)
        rows = await self._store.entries(
            connection.id, EntryFilter(), log_type=log_type, limit=count
        )
        return analyze([_stored_entry(r) for r in rows], analyzed_at=now_ms())

    async def slowlog_history(
        self, connection: Connection, where: EntryFilter, *, limit: int, offset: int
    ) -> list[StoredLogEntry]:
        await self.require_slow_log(connection)
        rows = await self._store.entries(
            connection.id, where, log_type=None, limit=limit, offset=offset
        )
        return [StoredLogEntry(**_stored_fields(r)) for r in rows]

    async def commandlog_history(
        self,
        connection: Connection,
        where: EntryFilter,
        *,
        log_type: LogType,
        limit: int,
        offset: int,
    ) -> list[StoredCommandLogEntry]:
        await self.require_command_log(connection)
        rows = await self._store.entries(
            connection.id, where, log_type=log_type, limit=limit, offset=offset
        )
        return [StoredCommandLogEntry(**_stored_fields(r), type=log_type) for r in rows]

    async def _live(self, connection: Connection, what: str, *command: Any) -> Any:
        client: EngineClient = self._connections.client(connection)
        try:
            return await client.execute(*command)
        except EngineError as exc:
            if is_refusal(exc):
                # Refused although detection found it (a subcommand denied, say): a missing
                # feature, explained, not the instance failing.
                raise CommandUnavailable(f"Failed to {what}: {exc.message}") from None
            # Down or hung: the engine's words, 503.
            raise Unavailable(f"Failed to {what}: {exc.message}") from None


def _live_entry(entry: LogEntry) -> LogEntryRead:
    return LogEntryRead(
        id=entry.id,
        startedAt=entry.started_at_ms,
        duration=entry.duration,
        command=entry.command,
        args=list(entry.args),
        clientAddress=entry.client_address,
        clientName=entry.client_name,
    )


def _stored_entry(row: Row[Any]) -> LogEntry:
    return LogEntry(
        id=row.entry_id,
        started_at_ms=row.started_at,
        duration=row.duration,
        args=tuple(decode_args(row.args)),
        client_address=row.client_address,
        client_name=row.client_name,
    )


def _stored_fields(row: Row[Any]) -> dict[str, Any]:
    return {
        "id": row.entry_id,
        "startedAt": row.started_at,
        "duration": row.duration,
        "command": row.command,
        "args": decode_args(row.args),
        "clientAddress": row.client_address,
        "clientName": row.client_name,
        "node": row.node,
        "capturedAt": row.captured_at,
    }
