"""Up/down of each polled connection, and the events its transitions publish.

One InstanceDown when a connection stops answering, one InstanceUp when it answers
again: a flapping or long-dead instance never floods the bus or the log.
"""

import logging
from collections.abc import Callable
from dataclasses import dataclass

from svc_monitor.engine.errors import EngineError
from svc_monitor.event_types.instance import InstanceDown, InstanceUp
from svc_monitor.events import EventBus, now_ms

logger = logging.getLogger(__name__)


@dataclass(slots=True)
class ConnectionHealth:
    up: bool | None = None  # None until the first poll
    since_ms: int = 0
    error: EngineError | None = None
    consecutive_failures: int = 0


class InstanceHealth:
    """Health per connection, as the INFO poll sees it."""

    def __init__(
        self, bus: EventBus, *, on_change: Callable[[str, int | None], None] | None = None
    ) -> None:
        self._bus = bus
        self._states: dict[str, ConnectionHealth] = {}
        # Told when a connection goes down (since when) or comes back (None): where replicas
        # share storage, the one that takes it over knows it was already reported down.
        self._on_change = on_change

    def restore_down(self, connection_id: str, since_ms: int) -> None:
        """Reported down by the replica that polled it before: no second InstanceDown; its
        InstanceUp will say since when it was down."""
        state = self.get(connection_id)
        if state.up is None:
            state.up, state.since_ms = False, since_ms

    def get(self, connection_id: str) -> ConnectionHealth:
        return self._states.setdefault(connection_id, ConnectionHealth())

    def succeeded(self, connection_id: str) -> None:
        state = self.get(connection_id)
        state.consecutive_failures = 0
        state.error = None
        if state.up is True:
            return
        was_down = state.since_ms if state.up is False else None
        state.up, state.since_ms = True, now_ms()
        logger.info("connection %s is up", connection_id)
        if was_down is not None and self._on_change is not None:
            self._on_change(connection_id, None)
        self._bus.publish(InstanceUp(connection_id=connection_id, down_since_ms=was_down))

    def failed(self, connection_id: str, error: EngineError) -> None:
        state = self.get(connection_id)
        state.consecutive_failures += 1
        state.error = error
        if state.up is False:
            return
        state.up, state.since_ms = False, now_ms()
        logger.warning("connection %s is down: %s", connection_id, error.message)
        if self._on_change is not None:
            self._on_change(connection_id, state.since_ms)
        self._bus.publish(
            InstanceDown(connection_id=connection_id, reason=error.kind, message=error.message)
        )

    def forget(self, connection_id: str) -> None:
        self._states.pop(connection_id, None)
