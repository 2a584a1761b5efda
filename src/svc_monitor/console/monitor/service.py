"""MONITOR capture sessions: preflight, start, stop, read, export, live tail, clean-up.

One capture may run per connection. The capture runs in the process that started it
(capture.py); its row in storage says how far it got, so the list, the lines and the
exports work from any replica, a stop asked on another replica reaches it through the row
(`stop_requested_by`), and a row whose process died is marked failed once its heartbeat
has been silent for SILENT_AFTER_MS (at once at startup on single-process storage).

Where detection found MONITOR missing (COMMAND INFO knows no such command: renamed away,
or disabled by a managed provider), neither the preflight nor a start opens a stream for
it: they say why instead.
"""

import asyncio
import functools
import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass

from svc_monitor.config import Settings, StorageType
from svc_monitor.connections.models import CommandUnavailable, Connection
from svc_monitor.connections.service import ConnectionService
from svc_monitor.console.monitor.capture import Capture
from svc_monitor.console.monitor.models import (
    Caps,
    CaptureSession,
    CaptureStatus,
    EndsBy,
    MonitorLine,
)
from svc_monitor.console.monitor.store import MonitorStore
from svc_monitor.console.monitor.stream import MonitorStream
from svc_monitor.console.monitor.tail import Ended, Missed, TailItem
from svc_monitor.engine.client import EngineClient, EngineTarget
from svc_monitor.engine.errors import EngineError, EngineResponseError
from svc_monitor.errors import Conflict, NotFound, Unavailable
from svc_monitor.events import now_ms

logger = logging.getLogger(__name__)

DEFAULT_DURATION_MS = 30_000
MIN_DURATION_MS = 500
MAX_DURATION_MS = 300_000
DEFAULT_MAX_LINES = 10_000
MAX_LINES = 100_000
DEFAULT_MAX_BYTES = 8 * 1024 * 1024
MIN_BYTES = 1024
MAX_BYTES = 32 * 1024 * 1024
# A running capture writes its row at least every 5 s (capture.HEARTBEAT_EVERY_S).
SILENT_AFTER_MS = 30_000
REAP_EVERY_S = 10.0
# A probe that the engine refused is remembered this long: each refusal is an entry in
# the server's ACL LOG, which opening the page again and again must not flood.
PROBE_MEMORY_S = 30.0
# A new viewer gets at most this many of the lines captured before it arrived.
TAIL_BACKLOG = 1000
# How often a viewer of a capture running on another replica reads its new lines.
REMOTE_TAIL_EVERY_S = 0.5
# Live viewers of one capture (each holds a queue of up to 2,000 lines).
MAX_VIEWERS = 20
# A viewer waiting for lines wakes at least this often (its socket re-checks the session).
TAIL_TICK_S = 10.0
EXPORT_PAGE = 1000
# MONITOR prints "<seconds.micros> [<db> <address>] " before the arguments.
LINE_OVERHEAD_BYTES = 45


class CaptureNotFound(NotFound):
    pass


class CaptureRunning(Conflict):
    """One capture at a time per connection."""


class TooManyViewers(Conflict):
    pass


class MonitorRefused(Conflict):
    """The engine will not run MONITOR for this connection's user (or has it disabled)."""


@dataclass(frozen=True, slots=True)
class Preflight:
    """What starting a capture would do, without starting one."""

    connection_id: str
    allowed: bool | None  # None: the engine did not answer, so nobody can tell
    problem: str | None
    ops_per_sec: float | None
    caps: Caps
    estimated_lines: int | None
    estimated_bytes: int | None
    ends_by: EndsBy | None
    running: CaptureSession | None
    redacted: bool


class MonitorService:
    """Runs captures on this process and answers for all of them."""

    def __init__(
        self,
        store: MonitorStore,
        connections: ConnectionService,
        settings: Settings,
    ) -> None:
        self._store = store
        self._connections = connections
        self._settings = settings
        self._redact = settings.MONITOR_REDACT_VALUES
        self._connect_timeout_s = settings.ENGINE_CONNECT_TIMEOUT_MS / 1000
        self._command_timeout_s = settings.ENGINE_COMMAND_TIMEOUT_MS / 1000
        self._captures: dict[str, Capture] = {}  # by connection id
        self._starting: set[str] = set()
        self._probes: dict[EngineTarget, tuple[float, bool, str]] = {}

    # --- starting and stopping ---

    @staticmethod
    def caps(*, duration_ms: int | None, max_lines: int | None, max_bytes: int | None) -> Caps:
        """The caps asked for, defaults filled in, held within the hard limits."""
        return Caps(
            duration_ms=_within(duration_ms, DEFAULT_DURATION_MS, MIN_DURATION_MS, MAX_DURATION_MS),
            max_lines=_within(max_lines, DEFAULT_MAX_LINES, 1, MAX_LINES),
            max_bytes=_within(max_bytes, DEFAULT_MAX_BYTES, MIN_BYTES, MAX_BYTES),
        )

    async def preflight(self, connection: Connection, caps: Caps) -> Preflight:
        running = await self.running(connection)
        client = self._connections.client(connection)
        ops: float | None = None
        per_command: float | None = None
        problem: str | None = None
        try:
            info = await client.info("stats")
            ops = info.get_float("stats", "instantaneous_ops_per_sec")
            received = info.get_float("stats", "total_net_input_bytes")
            commands = info.get_float("stats", "total_commands_processed")
            if received is not None and commands:
                per_command = received / commands
        except EngineError as exc:
            problem = f"The server did not answer: {exc.message}"
        allowed: bool | None = None
        if running is not None:
            allowed = True  # a capture is reading MONITOR right now
        elif problem is None:
            try:
                await self._connections.require_live_feature(connection, "monitor")
            except CommandUnavailable as exc:
                allowed, problem = False, exc.message  # known missing: no stream opened
            else:
                allowed, problem = await self._probe(connection)
        lines = None if ops is None else int(ops * caps.duration_ms / 1000)
        size = None
        if lines is not None:
            size = int(lines * (LINE_OVERHEAD_BYTES + (per_command or 0)))
        return Preflight(
            connection_id=connection.id,
            allowed=allowed,
            problem=problem,
            ops_per_sec=ops,
            caps=caps,
            estimated_lines=lines,
            estimated_bytes=size,
            ends_by=_ends_by(caps, lines, size),
            running=running,
            redacted=self._redact,
        )

    async def start(
        self, connection: Connection, caps: Caps, *, requested_by: str | None
    ) -> CaptureSession:
        """Open MONITOR and start capturing; refused while one runs on this connection."""
        self._connections.client(connection)  # refuses an undecryptable password, clearly
        busy = CaptureRunning(
            f"A MONITOR capture is already running on connection '{connection.id}'; "
            "stop it or wait for it to end"
        )
        if connection.id in self._starting:
            raise busy
        self._starting.add(connection.id)  # before any await: two starts cannot both pass
        try:
            if await self.running(connection) is not None:
                raise busy
            await self._connections.require_live_feature(connection, "monitor")
            target = self._connections.target(connection)
            try:
                stream = await self._open(target)
            except EngineError as exc:
                refused, problem = _explain(exc)
                if refused:
                    self._remember(target, allowed=False, problem=problem)
                    raise MonitorRefused(problem) from None
                raise Unavailable(f"Could not start MONITOR: {exc.message}") from None
            try:
                session = await self._store.insert_session(
                    connection.id,
                    started_at=now_ms(),
                    caps=caps,
                    requested_by=requested_by,
                    redacted=self._redact,
                )
            except BaseException:
                await stream.close()
                raise
            capture = Capture(
                session,
                stream,
                self._store,
                redact=self._redact,
                on_end=self._ended,
                backlog=functools.partial(_output_buffer, self._connections.client(connection)),
            )
            self._captures[connection.id] = capture
            capture.start()
        finally:
            self._starting.discard(connection.id)
        logger.info("monitor capture %s started on %s", session.id, connection.id)
        return session

    async def stop(self, session_id: int, *, by: str | None) -> CaptureSession:
        """End a running capture now (on whichever replica runs it)."""
        reason = f"stopped by {by}" if by else "stopped by request"
        capture = self._local(session_id)
        if capture is not None:
            return await capture.stop(CaptureStatus.STOPPED, reason)
        session = await self.get(session_id)
        if session.status is not CaptureStatus.RUNNING:
            raise Conflict(
                f"Capture {session_id} is not running: it {session.status.value} "
                f"({session.end_reason})"
            )
        await self._store.request_stop(session_id, by=by or "request")
        return session

    async def stop_all(self, reason: str) -> None:
        captures = list(self._captures.values())
        for capture in captures:
            capture.request_stop(CaptureStatus.STOPPED, reason)
        await asyncio.gather(*(c.wait() for c in captures), return_exceptions=True)

    async def run(self) -> None:
        """Until cancelled: mark captures of dead processes failed; then stop this one's."""
        try:
            # Memory and SQLite storage serve one process: whatever it left running is dead.
            alone = self._settings.STORAGE_TYPE in (StorageType.MEMORY, StorageType.SQLITE)
            await self._fail_silent(everything=alone)
            while True:
                await asyncio.sleep(REAP_EVERY_S)
                await self._fail_silent(everything=False)
        finally:
            await self.stop_all("stopped: svc-monitor shut down")

    # --- reads ---

    async def running(self, connection: Connection) -> CaptureSession | None:
        capture = self._captures.get(connection.id)
        if capture is not None:
            return capture.current
        return await self._store.running(connection.id, heartbeat_after=now_ms() - SILENT_AFTER_MS)

    async def get(self, session_id: int, *, connection_id: str | None = None) -> CaptureSession:
        """A capture by id; with `connection_id`, only if it was taken on that connection."""
        capture = self._local(session_id)
        session = capture.current if capture is not None else await self._store.get(session_id)
        if session is None or connection_id not in (None, session.connection_id):
            raise CaptureNotFound(f"Capture {session_id} not found", field="id")
        return session

    async def list_captures(
        self, connection: Connection, *, limit: int, offset: int
    ) -> list[CaptureSession]:
        sessions = await self._store.list_sessions(connection.id, limit=limit, offset=offset)
        capture = self._captures.get(connection.id)
        if capture is None:
            return sessions
        current = capture.current
        return [current if s.id == current.id else s for s in sessions]

    async def lines(
        self, session: CaptureSession, *, offset: int, limit: int, command: str | None
    ) -> list[MonitorLine]:
        """Stored lines from `offset` (a line's seq) on; a running capture's newest lines
        appear once their batch is written (within half a second)."""
        return await self._store.lines(session.id, from_seq=offset, limit=limit, command=command)

    async def export_pages(self, session: CaptureSession) -> AsyncIterator[list[MonitorLine]]:
        """Every stored line of a capture, a page at a time (never all in memory)."""
        seq = 0
        while True:
            page = await self._store.lines(session.id, from_seq=seq, limit=EXPORT_PAGE)
            if not page:
                return
            yield page
            seq = page[-1].seq + 1

    async def delete(self, session_id: int, *, connection_id: str | None = None) -> None:
        session = await self.get(session_id, connection_id=connection_id)
        if session.status is CaptureStatus.RUNNING:
            raise Conflict(f"Capture {session_id} is still running: stop it first")
        if not await self._store.delete(session_id):
            raise CaptureNotFound(f"Capture {session_id} not found", field="id")

    # --- live tail ---

    async def tail(self, session: CaptureSession) -> AsyncGenerator[list[TailItem], None]:
        """The lines captured so far (the newest TAIL_BACKLOG), then each new one as it comes,
        then Ended. Yields [] when idle for TAIL_TICK_S, so the caller can look around."""
        capture = self._local(session.id)
        if capture is None:
            async for items in self._tail_stored(session):
                yield items
            return
        if capture.viewers >= MAX_VIEWERS:
            raise TooManyViewers(f"Capture {session.id} already has {MAX_VIEWERS} live viewers")
        subscriber, in_memory, start_seq = capture.subscribe()
        try:
            yield await self._backlog(session.id, in_memory, start_seq)
            while True:
                items = await subscriber.take(timeout_s=TAIL_TICK_S)
                yield items
                if any(isinstance(item, Ended) for item in items):
                    return
        finally:
            capture.unsubscribe(subscriber)

    async def _backlog(
        self, session_id: int, in_memory: list[MonitorLine], start_seq: int
    ) -> list[TailItem]:
        begin = max(0, start_seq - TAIL_BACKLOG)
        first_in_memory = in_memory[0].seq if in_memory else start_seq
        items: list[TailItem] = [Missed(begin, "backlog")] if begin else []
        if begin < first_in_memory:
            items.extend(
                await self._store.lines(
                    session_id, from_seq=begin, before_seq=first_in_memory, limit=TAIL_BACKLOG
                )
            )
        items.extend(line for line in in_memory if line.seq >= begin)
        return items

    async def _tail_stored(self, session: CaptureSession) -> AsyncIterator[list[TailItem]]:
        """A finished capture, or one running on another replica (read from storage)."""
        begin = max(0, session.line_count - TAIL_BACKLOG)
        lines = await self._store.lines(session.id, from_seq=begin, limit=TAIL_BACKLOG)
        yield [*([Missed(begin, "backlog")] if begin else []), *lines]
        seq = lines[-1].seq + 1 if lines else begin
        current: CaptureSession | None = session
        while current is not None and current.status is CaptureStatus.RUNNING:
            await asyncio.sleep(REMOTE_TAIL_EVERY_S)
            lines = await self._store.lines(session.id, from_seq=seq, limit=TAIL_BACKLOG)
            if lines:
                seq = lines[-1].seq + 1
            current = await self._store.get(session.id)
            yield list(lines)
        if current is not None:
            yield [Ended(current)]

    # --- internals ---

    async def _open(self, target: EngineTarget) -> MonitorStream:
        return await MonitorStream.open(
            target,
            connect_timeout_s=self._connect_timeout_s,
            command_timeout_s=self._command_timeout_s,
        )

    async def _probe(self, connection: Connection) -> tuple[bool | None, str | None]:
        """Whether the engine lets our user run MONITOR: try it, and hang up at once."""
        target = self._connections.target(connection)
        remembered = self._probes.get(target)
        if remembered is not None and time.monotonic() - remembered[0] < PROBE_MEMORY_S:
            return remembered[1], remembered[2] or None
        try:
            stream = await self._open(target)
        except EngineError as exc:
            refused, problem = _explain(exc)
            if not refused:
                return None, problem
            self._remember(target, allowed=False, problem=problem)
            return False, problem
        await stream.close()
        self._remember(target, allowed=True, problem="")
        return True, None

    def _remember(self, target: EngineTarget, *, allowed: bool, problem: str) -> None:
        now = time.monotonic()
        # Bounded: forget what has expired before remembering more.
        self._probes = {t: p for t, p in self._probes.items() if now - p[0] < PROBE_MEMORY_S}
        self._probes[target] = (now, allowed, problem)

    def _local(self, session_id: int) -> Capture | None:
        return next((c for c in self._captures.values() if c.session.id == session_id), None)

    def _ended(self, capture: Capture) -> None:
        if self._captures.get(capture.session.connection_id) is capture:
            del self._captures[capture.session.connection_id]

    async def _fail_silent(self, *, everything: bool) -> None:
        now = now_ms()
        try:
            failed = await self._store.fail_silent(
                heartbeat_before=now + 1 if everything else now - SILENT_AFTER_MS,
                now=now,
                keep=[c.session.id for c in self._captures.values()],
            )
        except Exception:
            logger.exception("could not check for abandoned MONITOR captures")
            return
        if failed:
            logger.warning("marked %d abandoned MONITOR capture(s) failed", failed)


def _within(value: int | None, default: int, low: int, high: int) -> int:
    return default if value is None else max(low, min(high, value))


def _ends_by(caps: Caps, lines: int | None, size: int | None) -> EndsBy | None:
    if lines is None or size is None:
        return None
    # Whichever cap the estimated rate reaches first, if any is reached within the duration.
    line_share = lines / caps.max_lines
    byte_share = size / caps.max_bytes
    if max(line_share, byte_share) < 1:
        return "duration"
    return "line cap" if line_share >= byte_share else "byte cap"


def _explain(error: EngineError) -> tuple[bool, str]:
    """Whether the engine refused MONITOR itself (not just failed to answer), and why, for
    a person."""
    text = error.message
    if isinstance(error, EngineResponseError):
        if text.startswith("NOPERM"):
            return True, (
                f"The server refuses MONITOR for this connection's user ({text}). Allow it "
                "with ACL SETUSER <user> +monitor, or connect as a user that may run it."
            )
        if "unknown command" in text.lower():
            return True, f"MONITOR is disabled or renamed on this server ({text})."
        return True, f"The server refuses MONITOR ({text})."
    return False, f"The server did not answer: {text}"


async def _output_buffer(client: EngineClient, client_id: int) -> int | None:
    """`omem` of one client in CLIENT LIST (Redis 5+, Valkey): what the server holds for it."""
    reply = await client.execute("CLIENT", "LIST", "ID", str(client_id))
    text = reply.decode("utf-8", errors="replace") if isinstance(reply, bytes) else str(reply)
    for field in text.split():
        name, _, value = field.partition("=")
        if name == "omem" and value.isdigit():
            return int(value)
    return None
