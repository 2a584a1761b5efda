"""The cadence of one poll kind on one connection: interval, deadline, backoff.

The interval is re-read before every sleep, so `PUT /settings` applies without a
restart. A failing poll backs off exponentially (interval x 2^n, capped), so a
dead instance costs little; intervals come from `loop.time()` (monotonic), so a
wall-clock jump neither doubles nor skips polls.
"""

import asyncio
import logging
import math
import random
import time
from collections.abc import Awaitable
from typing import Protocol

from svc_monitor.engine.errors import EngineError, EngineTimeout
from svc_monitor.polling.models import PassSkipped, PollKind, PollTarget

logger = logging.getLogger(__name__)

BACKOFF_CAP_S = 30.0
# How often a kind that has nothing to do on a connection looks again (a standalone server
# becomes a cluster only by a restart, which detects it afresh).
IDLE_RECHECK_S = 5.0
# A pass that starts later than this share of its interval after it was due is late.
LATE_SHARE = 0.1
# Healthy passes fall on a grid the whole process shares: each connection has one of
# `grid_slots(n)` slots per interval, and every loop of a slot wakes together. An event
# loop that wakes ten times a second with work for a tenth of the fleet each time spends a
# fraction of what it spends waking for each connection on its own (bench/poll_floor.py
# --slots: --servers 100 --seconds 30 --slots 10: 2.6 CPU-s/min each on its own, 1.05 in
# ten slots, on a 2-core VM). A large fleet gets more slots, about PER_SLOT connections
# each: a thousand connections in ten slots woke a hundred passes at once, whose replies
# then held the loop long enough to make some passes of the next slot late
# (bench/poll_fanout.py --servers 1000: 1,184 late INFO passes in 120 s in ten slots, none
# in twenty; forty slots cost 6 % more CPU than twenty and made none late either).
SLOTS = 10
PER_SLOT = 50


def grid_slots(connections: int) -> int:
    """How many slots an interval has while this many connections are polled."""
    return max(SLOTS, math.ceil(connections / PER_SLOT))


class LoopHooks(Protocol):
    """What a loop needs from whoever runs it. One object serves every kind of a
    connection (each call names its kind): a thousand connections run ten thousand loops,
    and six closures a loop held more memory than the loops themselves."""

    async def target(self) -> PollTarget: ...

    @property
    def turn(self) -> asyncio.Lock:
        """Held by a pass of a kind that takes turns (PollKind.takes_turns)."""
        ...

    def interval_s(self, kind: PollKind) -> float: ...

    @property
    def grid_slots(self) -> int:
        """The slots of the shared grid now (grid_slots of the polled connections)."""
        ...

    def changed(self, timeout_s: float) -> Awaitable[bool]:
        """Sleep up to `timeout_s`; True if the settings changed meanwhile."""
        ...

    def succeeded(self, kind: PollKind) -> None: ...

    def failed(self, kind: PollKind, error: EngineError) -> None: ...

    def passed(self, kind: PollKind, seconds: float, ok: bool) -> None:
        """Told after every pass, whatever its outcome: the poll counts."""
        ...

    def late(self, kind: PollKind) -> None: ...


class PollLoop:
    """Runs one PollKind for one connection until cancelled."""

    __slots__ = (
        "_deadline_s",
        "_hooks",
        "_slot",
        "failures",
        "idle",
        "kind",
        "last_good_ms",
        "stopped",
        "ticks",
    )

    def __init__(
        self, kind: PollKind, hooks: LoopHooks, *, deadline_s: float, slot: float | None = None
    ) -> None:
        """`slot`: where this loop's healthy passes fall, as a share of each interval
        (0 <= slot < 1), rounded down to a slot of the grid; None keeps each pass an
        interval after the one before."""
        self.kind = kind
        self._hooks = hooks
        self._deadline_s = deadline_s
        self._slot = slot
        self.failures = 0
        self.last_good_ms: int | None = None
        self.ticks = 0
        self.stopped = False
        # The last look found the kind has nothing to do on this connection.
        self.idle = False

    def stop(self) -> None:
        """Ask the loop to end. Cancellation alone is not enough: a client library can
        swallow a CancelledError that lands at an unlucky moment (seen on Python 3.11
        under the test suite), so the loop also checks this flag between passes."""
        self.stopped = True

    async def tick(self) -> None:
        """One pass under the deadline; failures are counted, never raised. A kind that
        takes turns waits for its turn first, outside the deadline: the pass before it is
        bounded by its own."""
        if not self.kind.takes_turns:
            await self._tick()
            return
        async with self._hooks.turn:
            await self._tick()

    async def _tick(self) -> None:
        started = time.perf_counter()
        ok = False
        self.idle = False
        try:
            async with asyncio.timeout(self._deadline_s):
                try:
                    target = await self._hooks.target()
                except PassSkipped:
                    self.idle = True
                    return
                self.idle = self._does_not_apply(target)
                if self.idle:
                    return  # no pass: nothing sent, nothing counted
                self.ticks += 1
                await self.kind.poll(target)
            ok = True
        except EngineError as exc:
            self._failed(exc)
        except TimeoutError:
            self._failed(EngineTimeout(f"{self.kind.name} poll took over {self._deadline_s:g} s"))
        finally:
            # A crash (a bug) counts as a failed pass too, before the supervisor restarts us.
            if not self.idle:
                self._hooks.passed(self.kind, time.perf_counter() - started, ok)
        if ok:
            self.failures = 0
            self.last_good_ms = int(time.time() * 1000)
            self._hooks.succeeded(self.kind)

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        due: float | None = None
        while not self.stopped:
            started = loop.time()
            # An idle loop's look is not a pass: it is never late.
            late = (
                due is not None
                and not self.idle
                and started - due > LATE_SHARE * self._hooks.interval_s(self.kind)
            )
            if late:
                self._hooks.late(self.kind)
            await self.tick()
            jitter = random.uniform(0.9, 1.1)
            due = self._next_due(started, jitter)
            # Sleep until the next tick is due; a settings change wakes us to re-plan.
            while (remaining := self._next_due(started, jitter) - loop.time()) > 0:
                if self.stopped or not await self._hooks.changed(remaining):
                    break
                due = None  # re-planned by a settings change: not late by the old plan

    def _next_due(self, started: float, jitter: float) -> float:
        """When the next pass is due: on this loop's slot of the shared grid when healthy,
        at least half an interval after this pass began; an interval (or a backoff, or an
        idle look) after it began otherwise."""
        delay = self._delay_s(jitter)
        if self._slot is None or self.failures or self.idle:
            return started + delay
        slots = self._hooks.grid_slots
        offset = math.floor(self._slot * slots) / slots * delay
        return offset + (math.floor((started + delay / 2 - offset) / delay) + 1) * delay

    def _does_not_apply(self, target: PollTarget) -> bool:
        applies = self.kind.applies
        return applies is not None and not applies(target)

    def _delay_s(self, jitter: float) -> float:
        interval = self._hooks.interval_s(self.kind)
        if self.idle:
            share = self.kind.idle_recheck_share
            return interval * share if share is not None else max(interval, IDLE_RECHECK_S)
        if not self.failures:
            return interval
        backoff: float = min(interval * 2 ** (self.failures - 1), max(interval, BACKOFF_CAP_S))
        return backoff * jitter

    def _failed(self, error: EngineError) -> None:
        self.failures += 1
        if self.failures == 1:
            logger.debug("%s poll failed: %s", self.kind.name, error.message)
        self._hooks.failed(self.kind, error)
