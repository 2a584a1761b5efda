"""The browser CLI's part: its sessions and routes."""

from svc_monitor.console.cli.api import router
from svc_monitor.console.cli.service import CliService
from svc_monitor.parts import Part, Registry
from svc_monitor.services import Services


def part(registry: Registry) -> Part:
    services = registry.get(Services)
    registry.add(
        CliService,
        CliService(services.settings, auth=services.auth, connections=services.connections),
    )
    return Part(name="cli", routers=(router,))
