"""The frame around every page: the connections to switch between and the one chosen.

The choice lives in a cookie, so it holds for every page and every tab, and the page
sends it to the API as `X-Connection-Id`, the same way an API client chooses. An admin
also sees the instances that push over OTLP without a connection (discovered).
"""

import time
from dataclasses import dataclass, field

from svc_monitor.connections.models import Connection, EngineSnapshot, PushStatus
from svc_monitor.connections.service import ConnectionService
from svc_monitor.engine.capabilities import EngineIdentity
from svc_monitor.otlp.ingest.discovery import DiscoveredInstance, DiscoveredInstances

CONNECTION_COOKIE = "svc_connection"


@dataclass(frozen=True, slots=True)
class ConnectionChoice:
    """One entry of the connection switcher, with its engine as last seen."""

    id: str
    name: str
    address: str
    status: str  # connected | disconnected | unknown
    type: str | None
    version: str | None
    is_default: bool
    error: str | None
    # An OTLP push connection: status is whether any pushed field is fresh.
    pushed: bool = False
    last_push_ms: int | None = None


@dataclass(frozen=True, slots=True)
class Shell:
    connections: list[ConnectionChoice]
    connection: Connection | None  # the chosen one; None when there are none
    identity: EngineIdentity | None  # None until the engine has answered once
    # Unregistered pushers, for admins only (empty for everyone else).
    discovered: list[DiscoveredInstance] = field(default_factory=list)

    @property
    def selected(self) -> ConnectionChoice | None:
        if self.connection is None:
            return None
        return next(c for c in self.connections if c.id == self.connection.id)


async def build_shell(
    connections: ConnectionService,
    chosen_id: str | None,
    *,
    discovery: DiscoveredInstances | None = None,
) -> Shell:
    """The chosen connection (a stale cookie falls back to the default), and all of them;
    `discovery` (given for admins only) adds the unregistered pushers."""
    every = await connections.list()
    connection = next((c for c in every if c.id == chosen_id), None)
    if connection is None:
        connection = next((c for c in every if c.is_default), every[0] if every else None)
    seen = _last_seen(connection, connections) if connection else None
    return Shell(
        connections=[_choice(c, connections) for c in every],
        connection=connection,
        identity=seen.identity if seen is not None and seen.connected else None,
        discovered=discovery.visible() if discovery is not None else [],
    )


def _last_seen(connection: Connection, connections: ConnectionService) -> EngineSnapshot | None:
    seen = connections.last_seen(connection)
    if seen is None and connection.pushed:
        # Nothing pushed since this process started: disconnected, as the API says.
        seen = PushStatus(False, int(time.time() * 1000)).snapshot()
    return seen


def _choice(connection: Connection, connections: ConnectionService) -> ConnectionChoice:
    seen = _last_seen(connection, connections)
    if seen is None:
        status, identity, error = "unknown", None, connection.secret_error
    elif seen.connected:
        status, identity, error = "connected", seen.identity, None
    else:
        status, identity, error = "disconnected", None, seen.error.message if seen.error else None
    push = connections.push_status(connection)
    version = identity.version if identity else None
    if push is not None:
        version = push.version  # None until the Collector reports one (not "0.0.0")
    return ConnectionChoice(
        id=connection.id,
        name=connection.name,
        address=f"{connection.host}:{connection.port}",
        status=status,
        type=identity.type if identity else None,
        version=version,
        is_default=connection.is_default,
        error=error,
        pushed=connection.pushed,
        last_push_ms=push.last_push_ms if push is not None else None,
    )
