"""What pollers exchange: the Observation of one INFO read, and the plug-in shape of a poll."""

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from svc_monitor.config import Settings
from svc_monitor.connections.models import Connection
from svc_monitor.engine.capabilities import EngineIdentity
from svc_monitor.engine.client import EngineClient
from svc_monitor.engine.info import ParsedInfo
from svc_monitor.runtime_settings.schemas import RuntimeSettingsValues


@dataclass(frozen=True, slots=True)
class Observation:
    """INFO-shaped facts about one instance: `info.get(section, field)`, received at one time.

    Pushed instances (OTLP) fill only what was pushed; a missing field is absent,
    never 0.
    """

    connection_id: str
    received_at_ms: int
    info: ParsedInfo
    node: str | None = None  # host:port of a cluster node; None for the connection itself
    round_trip_ms: float | None = None  # how long the INFO took to answer, when polled
    pushed: bool = False  # from the OTLP receiver: only the fields a Collector sent


@dataclass(frozen=True, slots=True)
class PollTarget:
    """Everything one pass of a poll needs about its connection."""

    connection: Connection
    client: EngineClient
    identity: EngineIdentity | None


@dataclass(frozen=True, slots=True)
class PollKind:
    """One kind of poll (INFO, SLOWLOG ...): how often, and one pass of it.

    `poll` does one pass and never sleeps; cadence, deadline and backoff belong to
    polling/loop.py. Only the kind with `decides_health` turns failures into
    InstanceDown/InstanceUp events.
    """

    name: str
    interval_ms: Callable[[RuntimeSettingsValues, Settings], int]
    poll: Callable[[PollTarget], Awaitable[None]]
    decides_health: bool = False
    # Called once a connection stops being polled (removed or edited): drop its state.
    forget: Callable[[str], Awaitable[None]] | None = None
