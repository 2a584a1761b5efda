"""The connections' part: the registered instances, their engine clients and routes."""

from svc_monitor.connections.api import router
from svc_monitor.connections.live_connections import LiveConnections
from svc_monitor.connections.service import ConnectionService
from svc_monitor.connections.store import ConnectionStore
from svc_monitor.parts import Core, Part, Registry


def part(registry: Registry) -> Part:
    core = registry.get(Core)
    settings = core.settings
    ca_file = settings.ENGINE_TLS_CA_FILE
    live = registry.add(
        LiveConnections,
        LiveConnections(
            connect_timeout_s=settings.ENGINE_CONNECT_TIMEOUT_MS / 1000,
            command_timeout_s=settings.ENGINE_COMMAND_TIMEOUT_MS / 1000,
            tls_ca_file=str(ca_file) if ca_file else None,
            ssh_key_dir=settings.SVC_SSH_KEY_DIR,
        ),
    )
    store = ConnectionStore(core.db, core.secrets)
    registry.add(ConnectionService, ConnectionService(store, live, core.meta, settings, core.bus))
    return Part(name="connections", routers=(router,), stop=live.close)
