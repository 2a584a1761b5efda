"""The runtime settings' part: what users change at run time, and its routes."""

from svc_monitor.licensing.service import LicenseService
from svc_monitor.parts import Core, Part, Registry
from svc_monitor.runtime_settings.api import router
from svc_monitor.runtime_settings.service import RuntimeSettingsService
from svc_monitor.runtime_settings.store import RuntimeSettingsStore


def part(registry: Registry) -> Part:
    core = registry.get(Core)
    service = RuntimeSettingsService(
        RuntimeSettingsStore(core.db),
        core.settings,
        core.bus,
        # Read at each use: a licence applied at run time moves cloud mode's window.
        tier=lambda: registry.get(LicenseService).tier,
    )
    registry.add(RuntimeSettingsService, service)
    return Part(name="runtime settings", routers=(router,))
