"""The frame around every page: the connections to switch between and the one chosen.

The choice lives in a cookie, so it holds for every page and every tab, and the page
sends it to the API as `X-Connection-Id`, the same way an API client chooses.
"""

from dataclasses import dataclass

from svc_monitor.connections.models import Connection
from svc_monitor.connections.service import ConnectionService
from svc_monitor.engine.capabilities import EngineIdentity

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


@dataclass(frozen=True, slots=True)
class Shell:
    connections: list[ConnectionChoice]
    connection: Connection | None  # the chosen one; None when there are none
    identity: EngineIdentity | None  # None until the engine has answered once

    @property
    def selected(self) -> ConnectionChoice | None:
        if self.connection is None:
            return None
        return next(c for c in self.connections if c.id == self.connection.id)


async def build_shell(connections: ConnectionService, chosen_id: str | None) -> Shell:
    """The chosen connection (a stale cookie falls back to the default), and all of them."""
    every = await connections.list()
    connection = next((c for c in every if c.id == chosen_id), None)
    if connection is None:
        connection = next((c for c in every if c.is_default), every[0] if every else None)
    seen = connections.last_seen(connection) if connection else None
    return Shell(
        connections=[_choice(c, connections) for c in every],
        connection=connection,
        identity=seen.identity if seen is not None and seen.connected else None,
    )


def _choice(connection: Connection, connections: ConnectionService) -> ConnectionChoice:
    seen = connections.last_seen(connection)
    if seen is None:
        status, identity, error = "unknown", None, connection.secret_error
    elif seen.connected:
        status, identity, error = "connected", seen.identity, None
    else:
        status, identity, error = "disconnected", None, seen.error.message if seen.error else None
    return ConnectionChoice(
        id=connection.id,
        name=connection.name,
        address=f"{connection.host}:{connection.port}",
        status=status,
        type=identity.type if identity else None,
        version=identity.version if identity else None,
        is_default=connection.is_default,
        error=error,
    )
