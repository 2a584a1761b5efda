"""What a live tail receives, and the bounded queue that keeps a slow viewer from holding
the capture back or making it buffer without bound."""

import asyncio
from collections import deque
from dataclasses import dataclass
from typing import Literal, TypeAlias

from svc_monitor.console.monitor.models import CaptureSession, MonitorLine

# Lines one viewer may have waiting. A browser drains a few thousand lines a second; a
# viewer further behind than this misses lines (and is told how many) instead.
SUBSCRIBER_LIMIT = 2000


@dataclass(frozen=True, slots=True)
class Missed:
    """Lines the viewer does not get: older than the backlog it was sent, or dropped while it
    was too slow. They are stored all the same (read them from the capture's lines)."""

    count: int
    reason: Literal["backlog", "overflow"]


@dataclass(frozen=True, slots=True)
class Ended:
    session: CaptureSession


TailItem: TypeAlias = MonitorLine | Missed | Ended


class Subscriber:
    """One viewer's queue: at most `limit` lines, then counts what it had to drop."""

    def __init__(self, limit: int = SUBSCRIBER_LIMIT) -> None:
        self._items: deque[TailItem] = deque()
        self._limit = limit
        self._waiting = 0
        self._dropped = 0
        self._ready = asyncio.Event()
        self.ended = False

    def offer(self, line: MonitorLine) -> None:
        if self._waiting >= self._limit:
            self._dropped += 1
            return
        if self._dropped:
            self._items.append(Missed(self._dropped, "overflow"))
            self._dropped = 0
        self._items.append(line)
        self._waiting += 1
        self._ready.set()

    def end(self, session: CaptureSession) -> None:
        if self._dropped:
            self._items.append(Missed(self._dropped, "overflow"))
            self._dropped = 0
        self._items.append(Ended(session))
        self.ended = True
        self._ready.set()

    async def take(self, *, timeout_s: float | None = None) -> list[TailItem]:
        """Everything waiting, once there is something; [] when `timeout_s` passes first."""
        if not self._items:
            try:
                async with asyncio.timeout(timeout_s):
                    await self._ready.wait()
            except TimeoutError:
                return []
        items = list(self._items)
        self._items.clear()
        self._waiting = 0
        self._ready.clear()
        return items
