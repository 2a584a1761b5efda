"""Watching an app's event bus the way a consumer (the webhook dispatcher) would."""

from collections.abc import Callable
from typing import Any, TypeVar

import valkey.asyncio as avalkey

from svc_monitor.engine.clients import parse_client_line
from svc_monitor.events import Event
from tests.fixtures.app import RunningApp
from tests.fixtures.servers import RunningServer
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


def person(server: RunningServer, **kw: Any) -> avalkey.Valkey:
    """A client as a person at a CLI: one connection (so CLIENT INFO names the one the next
    command uses) and no CLIENT SETINFO, which a limited user would be denied (one more
    ACL LOG entry)."""
    return avalkey.Valkey(
        host=server.host,
        port=server.port,
        single_connection_client=True,
        decode_responses=True,
        lib_name=None,
        lib_version=None,
        **kw,
    )


async def run(conn: avalkey.Valkey, *args: Any) -> Any:
    return await conn.execute_command(*args)  # type: ignore[no-untyped-call]


async def address(conn: avalkey.Valkey) -> str:
    return parse_client_line(await run(conn, "CLIENT", "INFO"))["addr"]
