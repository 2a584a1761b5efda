"""Typed events and the in-process bus that carries them.

Detectors publish; consumers (webhooks, OTLP logs, stored events) subscribe. Each
subscriber has its own bounded queue: a slow consumer loses its own oldest events
(counted in `dropped`), never blocks a poller and never slows another consumer.
"""

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

logger = logging.getLogger(__name__)


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True, slots=True, kw_only=True)
class Event:
    at_ms: int = field(default_factory=now_ms)


@dataclass(frozen=True, slots=True, kw_only=True)
class InstanceEvent(Event):
    """Something about one monitored connection."""

    connection_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class InstanceDown(InstanceEvent):
    """A connection stopped answering (published once per transition)."""

    reason: str  # the EngineError kind: unreachable, timeout, auth, tls, protocol ...
    message: str


@dataclass(frozen=True, slots=True, kw_only=True)
class InstanceUp(InstanceEvent):
    """A connection answers again, or for the first time."""

    down_since_ms: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectionsChanged(Event):
    """A connection was added, edited or removed: pollers re-read the registry."""

    connection_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class RuntimeSettingsChanged(Event):
    """PUT /settings or a reset: poll intervals may have changed."""


class Subscription:
    """One consumer's bounded queue of events."""

    def __init__(self, name: str, maxsize: int) -> None:
        self.name = name
        self.dropped = 0
        self._queue: asyncio.Queue[Event] = asyncio.Queue(maxsize)

    def offer(self, event: Event) -> None:
        if self._queue.full():
            self._queue.get_nowait()
            self.dropped += 1
            if self.dropped == 1 or self.dropped % 1000 == 0:
                logger.warning("event consumer %s is behind; %d dropped", self.name, self.dropped)
        self._queue.put_nowait(event)

    async def get(self) -> Event:
        return await self._queue.get()

    def pending(self) -> list[Event]:
        """Everything queued now, without waiting."""
        events = []
        while not self._queue.empty():
            events.append(self._queue.get_nowait())
        return events

    async def __aiter__(self) -> AsyncIterator[Event]:
        while True:
            yield await self._queue.get()


class EventBus:
    """Fan-out of events to every subscription."""

    def __init__(self) -> None:
        self._subscriptions: list[Subscription] = []

    def subscribe(self, name: str, *, maxsize: int = 10_000) -> Subscription:
        subscription = Subscription(name, maxsize)
        self._subscriptions.append(subscription)
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        self._subscriptions.remove(subscription)

    def publish(self, event: Event) -> None:
        for subscription in self._subscriptions:
            subscription.offer(event)
