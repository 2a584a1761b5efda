"""Users and sign-in's part: sessions, members, tokens, third-party sign-in, routes."""

from svc_monitor.auth.activity import ActivityLog
from svc_monitor.auth.api import router
from svc_monitor.auth.broker.api import router as broker_router
from svc_monitor.auth.broker.service import BrokerService
from svc_monitor.auth.service import AuthService
from svc_monitor.auth.store import AuthStore
from svc_monitor.parts import Core, Part, Registry, Task


def part(registry: Registry) -> Part:
    core = registry.get(Core)
    settings, clock = core.settings, core.clock
    store = AuthStore(core.db)
    activity = ActivityLog(store, retention_days=settings.ACTIVITY_RETENTION_DAYS, clock=clock)
    auth = registry.add(AuthService, AuthService(settings, store, activity, clock=clock))
    registry.add(BrokerService, BrokerService(settings, auth, clock=clock))
    return Part(
        name="auth",
        routers=(router, broker_router),
        tasks=(
            Task("workspace-housekeeping", auth.run_housekeeping),
            Task("session-revocations", auth.revocations.run_sync),
        ),
    )
