"""The in-process event bus, the base event classes and the registry's own events.

Detectors publish; consumers (webhooks, OTLP logs, stored events) subscribe. Each
subscriber has its own bounded queue: a slow consumer loses its own oldest events
(counted in `dropped`), never blocks a poller and never slows another consumer.

The events people are told of (InstanceDown, MemoryReading, CveDetected ...) are
declared in event_types/, each beside its webhook event type.
"""

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

logger = logging.getLogger(__name__)


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True, slots=True, kw_only=True)
class Event:
    """Something that happened, and when (epoch ms)."""

    at_ms: int = field(default_factory=now_ms)


@dataclass(frozen=True, slots=True, kw_only=True)
class InstanceEvent(Event):
    """Something about one monitored connection."""

    connection_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectionsChanged(Event):
    """A connection was added, edited or removed: pollers re-read the registry."""

    connection_id: str
    from_replica: str | None = None  # made on another replica sharing this storage


@dataclass(frozen=True, slots=True, kw_only=True)
class RuntimeSettingsChanged(Event):
    """PUT /settings or a reset: poll intervals may have changed."""

    from_replica: str | None = None  # made on another replica sharing this storage


class Subscription:
    """One consumer's bounded queue of events."""

    def __init__(
        self,
        name: str,
        maxsize: int,
        kinds: tuple[type[Event], ...] | None = None,
        accepts: Callable[[Event], bool] | None = None,
    ) -> None:
        self.name = name
        # The event types this consumer wants; None for all. A consumer that waits for one
        # type must not have its queue filled (and its wanted event pushed out) by readings.
        self.kinds = kinds
        # Asked of each event of those types at publish time: a consumer that has nothing to
        # do with an event now is not woken for it.
        self.accepts = accepts
        self.offered = 0
        self.dropped = 0
        self._queue: asyncio.Queue[Event] = asyncio.Queue(maxsize)

    def offer(self, event: Event) -> None:
        self.offered += 1
        if self._queue.full():
            self._queue.get_nowait()
            self.dropped += 1
            if self.dropped == 1 or self.dropped % 1000 == 0:
                logger.warning("event consumer %s is behind; %d dropped", self.name, self.dropped)
        self._queue.put_nowait(event)

    async def get(self) -> Event:
        return await self._queue.get()

    @property
    def backlog(self) -> int:
        return self._queue.qsize()

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

    def subscribe(
        self,
        name: str,
        *,
        maxsize: int = 10_000,
        kinds: tuple[type[Event], ...] | None = None,
        accepts: Callable[[Event], bool] | None = None,
    ) -> Subscription:
        subscription = Subscription(name, maxsize, kinds, accepts)
        self._subscriptions.append(subscription)
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        self._subscriptions.remove(subscription)

    def publish(self, event: Event) -> None:
        for subscription in self._subscriptions:
            if subscription.kinds is not None and not isinstance(event, subscription.kinds):
                continue
            if subscription.accepts is None or subscription.accepts(event):
                subscription.offer(event)
