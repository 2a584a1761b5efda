"""One running capture: read MONITOR lines, redact, store in batches, feed live tails.

Bounded three ways: by duration, by lines and by bytes (the first cap reached ends it as
truncated). Memory is bounded too: lines wait in one batch, written when it holds
BATCH_LINES lines or BATCH_BYTES bytes or every FLUSH_EVERY_S, in one transaction; while a
batch is being written the next one fills, and a full next batch makes the reader wait
(the server then holds the rest, within the caps). Each viewer has its own bounded queue
(tail.py), so viewers never hold the capture back.
"""

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace

from svc_monitor.console.monitor.models import CaptureSession, CaptureStatus, MonitorLine
from svc_monitor.console.monitor.parsing import parse_line
from svc_monitor.console.monitor.redaction import redact_line
from svc_monitor.console.monitor.store import MonitorStore
from svc_monitor.console.monitor.stream import MonitorStream
from svc_monitor.console.monitor.tail import Subscriber
from svc_monitor.engine.errors import EngineError
from svc_monitor.events import now_ms

logger = logging.getLogger(__name__)

BATCH_LINES = 1000
BATCH_BYTES = 1024 * 1024
FLUSH_EVERY_S = 0.5
# A quiet capture still writes its row this often, so other replicas see it alive.
HEARTBEAT_EVERY_S = 5.0
# Lines read back to back before letting other tasks run: the stream's buffer can hold
# a few thousand short lines that read without ever waiting.
YIELD_EVERY = 256
# What the monitored server may hold for a capture that cannot keep up. A MONITOR client
# is a "normal" client, whose output buffer has no limit by default: on a server running
# ~200k commands/s a capture reading 64k lines/s let it grow to 144 MiB in 10 s
# (bench/monitor_capture.py). Past this the capture ends, to spare the server's memory.
MAX_SERVER_BACKLOG_BYTES = 32 * 1024 * 1024

# The capture's own client's output-buffer size on the server (CLIENT LIST ID `omem`),
# or None when it cannot be read (no CLIENT permission).
BacklogProbe = Callable[[int], Awaitable[int | None]]

Outcome = tuple[CaptureStatus, str]


class Capture:
    """A capture in progress; `start` it once, `stop` it (or let it end) once."""

    def __init__(
        self,
        session: CaptureSession,
        stream: MonitorStream,
        store: MonitorStore,
        *,
        redact: bool,
        on_end: Callable[["Capture"], None],
        backlog: BacklogProbe | None = None,
    ) -> None:
        self.session = session
        self._backlog = backlog
        self._stream = stream
        self._store = store
        self._redact = redact
        self._on_end = on_end
        self._started = time.monotonic()
        self.line_count = 0
        self.byte_count = 0
        self._stored_lines = 0
        self._stored_bytes = 0
        self._pending: list[MonitorLine] = []
        self._pending_bytes = 0
        self._writing: list[MonitorLine] = []
        self._flush_lock = asyncio.Lock()
        self._last_write = time.monotonic()
        self._subscribers: set[Subscriber] = set()
        self._stop = asyncio.Event()
        self._outcome: Outcome | None = None
        self._task: asyncio.Task[CaptureSession] | None = None

    # --- control ---

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"monitor-capture-{self.session.id}")

    def request_stop(self, status: CaptureStatus, reason: str) -> None:
        if self._outcome is None:
            self._outcome = (status, reason)
        self._stop.set()

    async def stop(self, status: CaptureStatus, reason: str) -> CaptureSession:
        """End it now; the final record once its last batch is stored."""
        self.request_stop(status, reason)
        return await self.wait()

    async def wait(self) -> CaptureSession:
        assert self._task is not None
        # Shielded: a caller giving up (a closed request) must not cancel the capture's own end.
        return await asyncio.shield(self._task)

    @property
    def current(self) -> CaptureSession:
        return replace(self.session, line_count=self.line_count, byte_count=self.byte_count)

    # --- live tails ---

    def subscribe(self) -> tuple[Subscriber, list[MonitorLine], int]:
        """A new viewer's queue, the lines still in memory, and the seq its queue starts at:
        every line before that is either in the list or already stored."""
        subscriber = Subscriber()
        self._subscribers.add(subscriber)
        return subscriber, [*self._writing, *self._pending], self.line_count

    @property
    def viewers(self) -> int:
        return len(self._subscribers)

    def unsubscribe(self, subscriber: Subscriber) -> None:
        self._subscribers.discard(subscriber)

    # --- the work ---

    async def _run(self) -> CaptureSession:
        reader = asyncio.create_task(self._read(), name=f"monitor-read-{self.session.id}")
        ticker = asyncio.create_task(self._tick(), name=f"monitor-tick-{self.session.id}")
        stopper = asyncio.create_task(self._stop.wait())
        outcome: Outcome = (CaptureStatus.COMPLETED, "duration reached")
        try:
            remaining = self.session.caps.duration_ms / 1000 - (time.monotonic() - self._started)
            done, _ = await asyncio.wait(
                {reader, ticker, stopper},
                timeout=max(0.0, remaining),
                return_when="FIRST_COMPLETED",
            )
            if stopper in done and self._outcome is not None:
                outcome = self._outcome
            elif reader in done:
                outcome = _outcome_of(reader)
            elif ticker in done:
                outcome = _outcome_of(ticker)
        except asyncio.CancelledError:
            outcome = (CaptureStatus.STOPPED, "stopped: svc-monitor shut down")
            raise
        finally:
            for task in (reader, ticker, stopper):
                task.cancel()
            await asyncio.gather(reader, ticker, stopper, return_exceptions=True)
            await self._stream.close()
            final = await self._end(*outcome)
        return final

    async def _read(self) -> Outcome:
        caps = self.session.caps
        stream = self._stream
        since_yield = 0
        while True:
            raw = await stream.read_line()
            if self.byte_count + raw.size > caps.max_bytes:
                return CaptureStatus.TRUNCATED, f"byte cap reached ({caps.max_bytes:,} bytes)"
            line = parse_line(raw.head, seq=self.line_count, size=raw.size, cut=raw.cut)
            if self._redact:
                line = redact_line(line)
            self.line_count += 1
            self.byte_count += raw.size
            self._pending.append(line)
            self._pending_bytes += raw.size
            for subscriber in self._subscribers:
                subscriber.offer(line)
            if self.line_count >= caps.max_lines:
                return CaptureStatus.TRUNCATED, f"line cap reached ({caps.max_lines:,} lines)"
            if len(self._pending) >= BATCH_LINES or self._pending_bytes >= BATCH_BYTES:
                asked = await self._flush()
                if asked is not None:
                    return CaptureStatus.STOPPED, f"stopped by {asked}"
                since_yield = 0
            else:
                since_yield += 1
                if since_yield >= YIELD_EVERY:
                    since_yield = 0
                    await asyncio.sleep(0)

    async def _tick(self) -> Outcome:
        """Write the batch every FLUSH_EVERY_S (and the heartbeat when quiet); ends with the
        outcome when another replica asked to stop this capture."""
        while True:
            await asyncio.sleep(FLUSH_EVERY_S)
            held = await self._server_backlog()
            if held is not None and held > MAX_SERVER_BACKLOG_BYTES:
                return CaptureStatus.TRUNCATED, (
                    f"the server held {held / 2**20:.0f} MiB of MONITOR output the capture could "
                    "not read fast enough; stopped to spare the server's memory"
                )
            quiet = time.monotonic() - self._last_write
            if self._pending or quiet >= HEARTBEAT_EVERY_S:
                asked = await self._flush()
                if asked is not None:
                    return CaptureStatus.STOPPED, f"stopped by {asked}"

    async def _server_backlog(self) -> int | None:
        client_id = self._stream.client_id
        if self._backlog is None or client_id is None:
            return None
        try:
            return await self._backlog(client_id)
        except EngineError:  # a busy or refusing server: the caps still bound the capture
            return None

    async def _flush(self) -> str | None:
        # Shielded: a batch being written when the reader is cancelled (the capture ending)
        # still completes and is counted, and the final flush waits for it.
        return await asyncio.shield(self._write())

    async def _write(self) -> str | None:
        async with self._flush_lock:
            batch, size = self._pending, self._pending_bytes
            self._pending, self._pending_bytes = [], 0
            self._writing = batch
            try:
                asked = await self._store.write_batch(
                    self.session,
                    batch,
                    captured_at=now_ms(),
                    line_count=self._stored_lines + len(batch),
                    byte_count=self._stored_bytes + size,
                )
            finally:
                self._writing = []
            self._stored_lines += len(batch)
            self._stored_bytes += size
            self._last_write = time.monotonic()
            return asked

    async def _end(self, status: CaptureStatus, reason: str) -> CaptureSession:
        try:
            await self._flush()
        except Exception:
            logger.exception(
                "monitor capture %s: the last lines could not be stored", self.session.id
            )
            if status is not CaptureStatus.FAILED:
                status, reason = CaptureStatus.FAILED, "storage failed while saving the last lines"
        final = replace(
            self.session,
            status=status,
            ended_at=now_ms(),
            line_count=self._stored_lines,
            byte_count=self._stored_bytes,
            end_reason=reason,
        )
        assert final.ended_at is not None
        try:
            await self._store.finish(
                final.id,
                status=status,
                reason=reason,
                ended_at=final.ended_at,
                line_count=final.line_count,
                byte_count=final.byte_count,
            )
        except Exception:
            logger.exception("monitor capture %s: its end could not be stored", final.id)
        logger.info(
            "monitor capture %s on %s %s: %s (%d lines)",
            final.id, final.connection_id, status.value, reason, final.line_count,
        )  # fmt: skip
        for subscriber in self._subscribers:
            subscriber.end(final)
        self.session = final
        with contextlib.suppress(Exception):
            self._on_end(self)
        return final


def _outcome_of(task: "asyncio.Task[Outcome]") -> Outcome:
    error = task.exception()
    if error is None:
        return task.result()
    if isinstance(error, EngineError):
        return CaptureStatus.FAILED, f"connection lost: {error.message}"
    logger.error("monitor capture failed", exc_info=error)
    return CaptureStatus.FAILED, f"failed: {type(error).__name__} (see svc-monitor's log)"
