"""One supervisor owns every poll loop: one task per (connection, poll kind).

It reconciles running loops with the connection registry whenever a
ConnectionsChanged event arrives (and every few seconds, for edits made by
another replica), restarts a loop that crashed, and on shutdown cancels and
awaits them all. Where replicas share storage it polls only the connections this
replica holds (replicas/ownership.py), and reconciles again whenever that changes. A
slow or dead instance only ever delays its own loops. Every pass of every loop is
counted in live state's poll counts; a connection that stops being polled leaves
nothing behind in live state.
"""

import asyncio
import logging
import zlib
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from svc_monitor.config import Settings
from svc_monitor.connections.models import Connection
from svc_monitor.connections.service import ConnectionService
from svc_monitor.engine.errors import EngineError
from svc_monitor.events import (
    ConnectionsChanged,
    EventBus,
    RuntimeSettingsChanged,
    Subscription,
)
from svc_monitor.kit.waiting import wait_quietly
from svc_monitor.pipe.health import InstanceHealth
from svc_monitor.pipe.live_view import LiveView
from svc_monitor.pipe.pipe import Pipe
from svc_monitor.polling.loop import PollLoop, grid_slots
from svc_monitor.polling.models import PassSkipped, PollKind, PollTarget
from svc_monitor.replicas.models import Ownership
from svc_monitor.runtime_settings.schemas import RuntimeSettingsValues
from svc_monitor.runtime_settings.service import RuntimeSettingsService

logger = logging.getLogger(__name__)

RECONCILE_EVERY_S = 5.0
CRASH_PAUSE_S = 1.0
STOP_GRACE_S = 2.0


@dataclass(slots=True)
class _Polled:
    connection: Connection
    hooks: "_Hooks"
    loops: dict[str, PollLoop] = field(default_factory=dict)
    tasks: list["asyncio.Task[None]"] = field(default_factory=list)


class PollSupervisor:
    """Starts, stops and restarts the poll loops of every connection."""

    def __init__(
        self,
        *,
        connections: ConnectionService,
        runtime_settings: RuntimeSettingsService,
        settings: Settings,
        bus: EventBus,
        health: InstanceHealth,
        pipe: Pipe,
        live_state: LiveView,
        ownership: Ownership,
        kinds: Sequence[PollKind],
        carry_on: Callable[[list[str]], Awaitable[None]] | None = None,
    ) -> None:
        self._connections = connections
        self._runtime_settings = runtime_settings
        self._settings = settings
        self._bus = bus
        self._health = health
        self._pipe = pipe
        self._live_state = live_state  # its poll counts
        self._ownership = ownership
        self._carry_on = carry_on
        self._nudged = asyncio.Event()
        ownership.on_change(self._nudged.set)
        self._kinds = list(kinds)
        self._polled: dict[str, _Polled] = {}
        self._values: RuntimeSettingsValues | None = None
        self._sleepers: set[asyncio.Future[bool]] = set()
        self._stopping = False
        self._on_change: list[Callable[[], None]] = []

    def request_stop(self) -> None:
        """Before cancelling run(): see PollLoop.stop for why a flag as well."""
        self._stopping = True
        self._wake_sleepers()

    def polled_connections(self) -> list[Connection]:
        """The connections polled now (the registry as of the last reconcile, less those
        whose password cannot be read), without a query: a scrape asks on every request."""
        return [polled.connection for polled in self._polled.values()]

    def on_change(self, callback: Callable[[], None]) -> None:
        """Call `callback` whenever a reconcile has started or stopped some loops."""
        self._on_change.append(callback)

    def loops_of(self, connection_id: str) -> dict[str, PollLoop]:
        polled = self._polled.get(connection_id)
        return {} if polled is None else polled.loops

    async def run(self) -> None:
        """Reconcile until cancelled; then stop every loop."""
        changes = self._bus.subscribe(
            "poll-supervisor", maxsize=100, kinds=(ConnectionsChanged, RuntimeSettingsChanged)
        )
        try:
            while not self._stopping:
                self._nudged.clear()
                await self.reconcile()
                await wait_quietly(self._next_change(changes), RECONCILE_EVERY_S)
        finally:
            self._bus.unsubscribe(changes)
            await self.stop_all()

    async def reconcile(self) -> None:
        await self._refresh_values()
        pollable = {
            c.id: c
            for c in await self._connections.list()
            # Push connections are never dialled: the OTLP receiver feeds their pipe.
            if "password" not in c.unreadable and not c.pushed
        }
        self._ownership.offer(frozenset(pollable))
        wanted = {c: pollable[c] for c in self._ownership.owned(pollable)}
        gone = [
            connection_id
            for connection_id, polled in self._polled.items()
            if (current := wanted.get(connection_id)) is None
            or current.updated_at != polled.connection.updated_at
        ]
        await self._stop(gone)
        new = [c for connection_id, c in wanted.items() if connection_id not in self._polled]
        if new and self._carry_on is not None:
            try:
                await self._carry_on([c.id for c in new])
            except Exception as exc:  # storage out: start afresh (an alert may come twice)
                logger.warning(
                    "could not read what the previous holder of %d connections kept (alert "
                    "states, history cadence, anomaly baselines): %s",
                    len(new),
                    exc,
                )
        for connection in new:
            self._start(connection)
        if gone or new:
            for callback in self._on_change:
                callback()

    async def stop_all(self) -> None:
        await self._stop(list(self._polled))

    # --- internals ---

    def _start(self, connection: Connection) -> None:
        polled = _Polled(connection, _Hooks(self, connection))
        for kind in self._kinds:
            self._start_kind(polled, kind)
        self._polled[connection.id] = polled
        logger.debug("polling %s (%s)", connection.id, ", ".join(polled.loops))

    def _start_kind(self, polled: _Polled, kind: PollKind) -> None:
        loop = self._loop(polled, kind)
        polled.loops[kind.name] = loop
        name = f"poll:{kind.name}:{polled.connection.id}"
        polled.tasks.append(asyncio.create_task(self._supervised(loop), name=name))

    async def _stop(self, connection_ids: list[str]) -> None:
        """Stop these connections' loops together: one grace period for all of them, not
        one each (a thousand connections stopped one by one took minutes to shut down)."""
        stopping = [p for c in connection_ids if (p := self._polled.pop(c, None)) is not None]
        if not stopping:
            return
        # Graceful first: a pass in flight finishes (each is bounded by its deadline) and a
        # sleeping loop wakes and sees the flag. Cancelling mid-command would leave
        # valkey-py's socket to the garbage collector.
        for polled in stopping:
            for loop in polled.loops.values():
                loop.stop()
        self._wake_sleepers()
        tasks = [task for polled in stopping for task in polled.tasks]
        if tasks:
            _, pending = await asyncio.wait(tasks, timeout=STOP_GRACE_S)
            for task in pending:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        for polled in stopping:
            connection_id = polled.connection.id
            self._health.forget(connection_id)
            # Removed, or edited (maybe to another server): its observations, facts and
            # poll counts go, so neither live views nor a scrape show a connection that is
            # gone, and every detector starts over.
            self._pipe.forget(connection_id)
            for kind in self._kinds:
                if kind.forget is not None:
                    await kind.forget(connection_id)

    def _loop(self, polled: _Polled, kind: PollKind) -> PollLoop:
        engine_deadline = (
            self._settings.ENGINE_CONNECT_TIMEOUT_MS + self._settings.ENGINE_COMMAND_TIMEOUT_MS
        ) / 1000
        # A pass may make a few round trips; each is bounded by the engine deadline. Every
        # kind of a connection has the same place on the grid, steady across restarts and
        # replicas (the grid's slots follow the fleet's size: polling/loop.py).
        slot = zlib.crc32(polled.connection.id.encode()) / 2**32
        return PollLoop(kind, polled.hooks, deadline_s=engine_deadline * 2, slot=slot)

    def interval_s(self, kind: PollKind) -> float:
        assert self._values is not None
        return kind.interval_ms(self._values, self._settings) / 1000

    async def _supervised(self, loop: PollLoop) -> None:
        while not loop.stopped:
            try:
                await loop.run()
            except asyncio.CancelledError:
                raise
            except Exception:
                # A bug in one poll must not end polling: log it, pause, start again.
                logger.exception("%s poll loop crashed; restarting", loop.kind.name)
                await asyncio.sleep(CRASH_PAUSE_S)

    async def _refresh_values(self) -> None:
        values = await self._runtime_settings.current()
        if values != self._values:
            self._values = values
            self._wake_sleepers()

    def _wake_sleepers(self) -> None:
        for waiter in self._sleepers:
            _settle(waiter, True)

    async def _wait_for_new_values(self, timeout_s: float) -> bool:
        """Sleep up to `timeout_s`; True if the runtime settings changed meanwhile.

        A bare future woken by a timer or by `_wake_sleepers`: no task per sleep (every
        loop sleeps once a tick), and nothing here turns a cancellation into a timeout.
        """
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[bool] = loop.create_future()
        timer = loop.call_later(timeout_s, _settle, waiter, False)
        self._sleepers.add(waiter)
        try:
            return await waiter
        finally:
            timer.cancel()
            self._sleepers.discard(waiter)

    async def _next_change(self, changes: Subscription) -> None:
        """A change of the connections, the settings, or of what this replica holds."""
        nudged = asyncio.ensure_future(self._nudged.wait())
        changed = asyncio.ensure_future(_next_change(changes))
        try:
            await asyncio.wait({nudged, changed}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            nudged.cancel()
            changed.cancel()


class _Hooks:
    """What every poll loop of one connection asks of the supervisor (polling/loop.py
    LoopHooks): its target, cadence and settings wake-up, and where its outcomes go."""

    __slots__ = ("_connection", "_supervisor", "turn")

    def __init__(self, supervisor: PollSupervisor, connection: Connection) -> None:
        self._supervisor = supervisor
        self._connection = connection
        self.turn = asyncio.Lock()

    async def target(self) -> PollTarget:
        if self._supervisor._ownership.fenced(self._connection.id):
            # Lost (or no longer trusted) since the last reconcile, which stops this loop.
            raise PassSkipped
        connections = self._supervisor._connections
        seen = connections.last_seen(self._connection)
        return PollTarget(
            connection=self._connection,
            client=connections.client(self._connection),
            identity=seen.identity if seen is not None else None,
            values=self._supervisor._values,
        )

    def interval_s(self, kind: PollKind) -> float:
        return self._supervisor.interval_s(kind)

    @property
    def grid_slots(self) -> int:
        return grid_slots(len(self._supervisor._polled))

    def changed(self, timeout_s: float) -> Awaitable[bool]:
        # The supervisor's own coroutine, not one wrapped in ours: a frame less per sleep.
        return self._supervisor._wait_for_new_values(timeout_s)

    def succeeded(self, kind: PollKind) -> None:
        if kind.decides_health:
            self._supervisor._health.succeeded(self._connection.id)

    def failed(self, kind: PollKind, error: EngineError) -> None:
        if kind.decides_health:
            self._supervisor._health.failed(self._connection.id, error)

    def passed(self, kind: PollKind, seconds: float, ok: bool) -> None:
        self._supervisor._live_state.polls.record(
            self._connection.id, kind.name, seconds=seconds, ok=ok
        )

    def late(self, kind: PollKind) -> None:
        self._supervisor._live_state.polls.record_late(kind.name)


async def _next_change(changes: Subscription) -> None:
    while not isinstance(await changes.get(), ConnectionsChanged | RuntimeSettingsChanged):
        pass


def _settle(waiter: "asyncio.Future[bool]", changed: bool) -> None:
    if not waiter.done():
        waiter.set_result(changed)
