"""The system parts: /health and /version (at the root and under /api); and the health
and version services, the version check, and every engine detected once at start-up."""

import asyncio

from svc_monitor.connections.service import ConnectionService
from svc_monitor.licensing.service import LicenseService
from svc_monitor.parts import Core, Part, Registry, Task
from svc_monitor.system.api import router
from svc_monitor.system.service import HealthService
from svc_monitor.system.version_check import VersionService


def routes(registry: Registry) -> Part:
    """Listed first: routes match in the order they were included, and /health is what
    a load balancer (and the start-up bench) asks first, before any other route is."""
    return Part(name="system routes", routers=(router,), root_routers=(router,))


def part(registry: Registry) -> Part:
    core = registry.get(Core)
    connections = registry.get(ConnectionService)
    health = registry.add(HealthService, HealthService(core.db, connections, core.live_state))

    def versions() -> VersionService:
        license = registry.get(LicenseService)
        return VersionService(core.settings, air_gapped=lambda: license.air_gapped)

    registry.provide(VersionService, versions)

    async def first_check() -> None:
        """Detect every engine once at startup, so the first /health and the connection
        list answer with engine facts at once; a slow or dead instance only delays its
        own entry."""
        listed = [c for c in await connections.list() if not c.secret_error and not c.pushed]
        await asyncio.gather(*(connections.check(c) for c in listed), return_exceptions=True)

    return Part(
        name="system",
        tasks=(
            Task("version-check", lambda: registry.get(VersionService).run()),
            Task("first-check", first_check),
        ),
        stop=health.close,  # probes of hung servers, before their clients close
    )
