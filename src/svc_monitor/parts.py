"""What a domain adds to the app, declared in one place: the `Part` its `part.py` returns.

A part function takes the `Registry`, builds the domain's services over what earlier parts
registered (`registry.get(SlowlogService)`: by type, not by a hand-passed argument),
registers its own, and returns the frozen `Part`: its routers, its background tasks, what
it feeds the pipe with and polls, its Prometheus collectors, its history tables, and its
start, stop and takeover hooks. The composition (features.py) calls the part functions in
its list's order, which is also the pipe's, the polls', the tasks' start and the scrape's
order; what needs the pipe or the poll supervisor (poll kinds, INFO riders, collectors)
is declared as a function, called once those exist.

Kept free of the layers it names (the imports below are for annotations only), so any
domain's part.py may import it.
"""

from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, TypeVar, cast

if TYPE_CHECKING:
    from fastapi import APIRouter
    from prometheus_client.registry import Collector
    from sqlalchemy import Table

    from svc_monitor.config import Settings
    from svc_monitor.connections.models import Connection
    from svc_monitor.events import EventBus
    from svc_monitor.kit.secret_box import SecretBox
    from svc_monitor.pipe.consumers import FactsConsumer, ObservationConsumer
    from svc_monitor.pipe.live_state import LiveState
    from svc_monitor.polling.info_rides import InfoRider
    from svc_monitor.polling.models import PollKind
    from svc_monitor.storage.app_meta import AppMetaStore
    from svc_monitor.storage.database import Database

T = TypeVar("T")
V = TypeVar("V")


class Registry:
    """The services the parts built, one per type (a protocol such as Ownership counts).

    A part adds a service built at once (`add`), or says how to build it (`provide`): it
    is built on its first `get`, so a part may need a service of a part listed after it
    (the core's list is in the order its tasks start, not in the order its services
    depend on each other); `build_all` builds what nobody asked for yet."""

    def __init__(self) -> None:
        self._services: dict[type[Any], object] = {}
        self._factories: dict[type[Any], Callable[[], object]] = {}
        self._building: list[type[Any]] = []

    def add(self, kind: type[T], service: T) -> T:
        if kind in self._services or kind in self._factories:
            raise ValueError(f"a {kind.__name__} is registered already")
        self._services[kind] = service
        return service

    def provide(self, kind: type[T], factory: Callable[[], T]) -> None:
        if kind in self._services or kind in self._factories:
            raise ValueError(f"a {kind.__name__} is registered already")
        self._factories[kind] = factory

    def get(self, kind: type[T]) -> T:
        if kind not in self._services:
            if kind not in self._factories:
                raise LookupError(f"no part registered a {kind.__name__} (yet)")
            if kind in self._building:
                cycle = " -> ".join(k.__name__ for k in (*self._building, kind))
                raise LookupError(f"services that need each other: {cycle}")
            self._building.append(kind)
            try:
                self._services[kind] = self._factories[kind]()
            finally:
                self._building.pop()
            del self._factories[kind]
        return cast(T, self._services[kind])

    def find(self, kind: type[T]) -> T | None:
        """The service, or None when its part left it out (an export turned off)."""
        if kind in self._services or kind in self._factories:
            return self.get(kind)
        return None

    def build_all(self) -> None:
        for kind in list(self._factories):
            if kind in self._factories:
                self.get(kind)

    def view(self, cls: type[V], **given: object) -> V:
        """A typed view (services.py's `Services`, `Features`): each field is the service
        registered under the type its annotation names; an `X | None` field is None when
        none is; `given` fills the fields no type names (a clock)."""
        self.build_all()
        by_name: dict[str, list[type[Any]]] = {}
        for kind in self._services:
            by_name.setdefault(kind.__name__, []).append(kind)
        values: dict[str, object] = dict(given)
        for field in fields(cast(Any, cls)):
            if field.name in given:
                continue
            annotation = field.type if isinstance(field.type, str) else field.type.__name__
            name = annotation.removesuffix(" | None")
            kinds = by_name.get(name, [])
            if len(kinds) > 1:
                raise LookupError(f"{cls.__name__}.{field.name}: several types named {name}")
            if not kinds and name == annotation:
                raise LookupError(f"{cls.__name__}.{field.name}: no part registered a {name}")
            values[field.name] = self._services[kinds[0]] if kinds else None
        build: Callable[..., V] = cls
        return build(**values)


@dataclass(frozen=True, slots=True)
class Core:
    """What compose.py builds before any part, for all of them: the settings, the wall
    clock (tests move it), storage, the secret box, the app's own rows, the event bus and
    what the pipe last said of each connection."""

    settings: "Settings"
    clock: Callable[[], float]
    db: "Database"
    secrets: "SecretBox"
    meta: "AppMetaStore"
    bus: "EventBus"
    live_state: "LiveState"


@dataclass(frozen=True, slots=True)
class Task:
    """A background task: started with the part's phase, cancelled at stop."""

    name: str
    run: Callable[[], Coroutine[Any, Any, None]]


def _nothing() -> Sequence[Any]:
    return ()


@dataclass(frozen=True, slots=True)
class Part:
    """What one domain adds; every field but the name is optional."""

    name: str
    routers: "tuple[APIRouter, ...]" = ()  # mounted under /api
    root_routers: "tuple[APIRouter, ...]" = ()  # mounted at the root
    tasks: tuple[Task, ...] = ()
    # What it takes from the pipe, in pipe order within the part.
    observation_consumers: "tuple[ObservationConsumer, ...]" = ()
    facts_consumers: "tuple[FactsConsumer, ...]" = ()
    # Called once the pipe is built (riders), then once the INFO riders are (kinds).
    info_riders: "Callable[[], Sequence[InfoRider]]" = _nothing
    poll_kinds: "Callable[[], Sequence[PollKind]]" = _nothing
    # Called once the poll supervisor and the OTLP receiver are built, in scrape order.
    collectors: "Callable[[], Sequence[Collector]]" = _nothing
    # Its history tables for retention; the fast-growing `sample_tables` are also swept
    # hourly (storage/retention.py).
    history_tables: "tuple[Table, ...]" = ()
    sample_tables: "tuple[Table, ...]" = ()
    start: Callable[[], Awaitable[None]] | None = None  # awaited before its tasks start
    stop_request: Callable[[], None] | None = None  # at stop, before any task is cancelled
    stop: Callable[[], Awaitable[None]] | None = None  # at stop, after the tasks ended
    # A connection taken over from another replica, or polled again after a restart on
    # lasting storage: what this domain carries on from (before the first poll).
    takeover: Callable[[list[str]], Awaitable[None]] | None = None


@dataclass(frozen=True, slots=True)
class Watched:
    """The connections this replica watches, as collectors read them at each scrape:
    those it polls, and those that push their metrics over OTLP."""

    polled: "Callable[[], Sequence[Connection]]"
    pushed: "Callable[[], Sequence[Connection]]"

    def all(self) -> "list[Connection]":
        return [*self.polled(), *self.pushed()]

    def ids(self) -> set[str]:
        return {c.id for c in self.all()}


def addresses(connections: "Sequence[Connection]") -> dict[str, str]:
    """Each connection's `host:port`, by id (the `instance` label of some families)."""
    return {c.id: f"{c.host}:{c.port}" for c in connections}
