"""Watching an app's event bus the way a consumer (the webhook dispatcher) would."""

from collections.abc import Callable
from typing import TypeVar

from svc_monitor.events import Event
from tests.fixtures.app import RunningApp
from tests.fixtures.waiting import eventually

E = TypeVar("E", bound=Event)


class BusWatcher:
    """Everything published on the app's bus since the watcher was made."""

    def __init__(self, app: RunningApp) -> None:
        self._subscription = app.services.bus.subscribe("test-watcher", maxsize=100_000)
        self.events: list[Event] = []

    def of(self, kind: type[E]) -> list[E]:
        self.events.extend(self._subscription.pending())
        return [e for e in self.events if isinstance(e, kind)]

    async def wait_for(
        self, kind: type[E], where: Callable[[E], bool] = lambda _: True, *, within: float = 10.0
    ) -> E:
        """The first event of `kind` (already seen or to come) for which `where` holds."""
        found: list[E] = []

        async def seen() -> bool:
            found[:] = [e for e in self.of(kind) if where(e)]
            return bool(found)

        await eventually(seen, within=within)
        return found[0]

    async def next(
        self, kind: type[E], where: Callable[[E], bool] = lambda _: True, *, within: float = 10.0
    ) -> E:
        """The first event of `kind` published from now on for which `where` holds."""
        already = len(self.of(kind))
        found: list[E] = []

        async def seen() -> bool:
            found[:] = [e for e in self.of(kind)[already:] if where(e)]
            return bool(found)

        await eventually(seen, within=within)
        return found[0]
