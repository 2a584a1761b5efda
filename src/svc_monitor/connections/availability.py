"""Refusing early what detection found missing, with the 501 a panel shows as its explanation.

A command a managed provider disables, a server renames away or an ACL user may not run is
found once per connection by engine/capabilities.py (again after a reconnect). A route that
needs one asks here first: it answers why the command is missing instead of sending it again
and passing the server's refusal on as a failure.
"""

from svc_monitor.connections.models import Connection
from svc_monitor.connections.service import ConnectionService
from svc_monitor.engine.capabilities import EngineIdentity, Feature, unavailable_reason
from svc_monitor.errors import NotSupported


class CommandUnavailable(NotSupported):
    """A command this connection's engine lacks: renamed, disabled, or denied to its user."""


def require_feature(identity: EngineIdentity | None, feature: Feature) -> None:
    """CommandUnavailable when detection found `feature` missing; nothing while unknown."""
    if identity is not None and not identity.capabilities.has(feature):
        raise CommandUnavailable(unavailable_reason(identity.capabilities, feature))


async def require_live_feature(
    connections: ConnectionService, connection: Connection, feature: Feature
) -> None:
    """require_feature on the connection's engine, detected first if it was never checked.

    An engine known to be down is not asked again here (a page or a history read must not
    wait out a connect timeout) nor refused: a live read then fails on its own with 503.
    Nor is a push connection, which no command reaches and whose routes say so.
    """
    if connection.pushed:
        return
    seen = connections.last_seen(connection)
    if seen is None:
        seen = await connections.check(connection)
    require_feature(seen.identity, feature)
