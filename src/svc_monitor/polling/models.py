"""The plug-in shape of a poll: what one pass needs, and how often it runs."""

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from svc_monitor.config import Settings
from svc_monitor.connections.models import Connection
from svc_monitor.engine.capabilities import EngineIdentity
from svc_monitor.engine.client import EngineClient
from svc_monitor.runtime_settings.schemas import RuntimeSettingsValues


class PassSkipped(Exception):
    """Raised by a loop's target: no pass now (this replica does not hold the connection),
    and it is not a failure of the instance."""


@dataclass(frozen=True, slots=True)
class PollTarget:
    """Everything one pass of a poll needs about its connection."""

    connection: Connection
    client: EngineClient
    identity: EngineIdentity | None
    # The runtime settings in force (None only where a pass is built by hand).
    values: RuntimeSettingsValues | None = None


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
    # Whether the kind has anything to do on this connection now (the cluster poll on a
    # standalone server has not; commandstats read along with INFO needs no read of its
    # own). A pass it would skip is not run at all: the loop looks again every
    # IDLE_RECHECK_S instead of waking every interval for nothing.
    applies: Callable[[PollTarget], bool] | None = None
    # Looks again after this share of its interval instead: for a kind whose idleness can
    # end at any pass (a read no longer carried by INFO), so its own reads resume on time.
    idle_recheck_share: float | None = None
    # Called once a connection stops being polled (removed or edited): drop its state.
    forget: Callable[[str], Awaitable[None]] | None = None
    # Passes of such kinds on one connection take turns (polling/loop.py), so their
    # commands share one pooled connection to the server instead of opening one each
    # whenever two fall due together. Off for INFO (a connection of its own) and for a
    # kind whose pass may run long (key analytics), which would hold the others up.
    takes_turns: bool = True
