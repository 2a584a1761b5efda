"""The licence's parts: its checks and routes, and the usage telemetry (listed apart:
its task starts after the users' housekeeping)."""

from svc_monitor.licensing.api import router
from svc_monitor.licensing.service import LicenseService
from svc_monitor.licensing.store import SharedLicenseStore
from svc_monitor.licensing.telemetry import UsageTelemetry
from svc_monitor.parts import Core, Part, Registry, Task
from svc_monitor.replicas.change_feed import ChangeFeed


def part(registry: Registry) -> Part:
    core = registry.get(Core)

    def license() -> LicenseService:
        db = core.db
        shared = SharedLicenseStore(db) if db.shared else None
        license = LicenseService(core.settings, clock=core.clock, shared=shared)
        # An activation here reaches the other replicas at once, and theirs this one.
        changes = registry.get(ChangeFeed)
        license.on_change = lambda: changes.announce("license")
        changes.on("license", license.adopt_shared)
        return license

    registry.provide(LicenseService, license)
    return Part(
        name="licensing",
        routers=(router,),
        tasks=(Task("licence-checks", lambda: registry.get(LicenseService).run()),),
    )


def telemetry(registry: Registry) -> Part:
    settings = registry.get(Core).settings
    registry.provide(UsageTelemetry, lambda: UsageTelemetry(settings, registry.get(LicenseService)))
    return Part(
        name="usage telemetry",
        tasks=(Task("usage-telemetry", lambda: registry.get(UsageTelemetry).run()),),
    )
