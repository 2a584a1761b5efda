"""The client analytics domain's part: CLIENT LIST polled, sampled and served."""

from svc_monitor.client_analytics.api import router
from svc_monitor.client_analytics.service import ClientAnalyticsService
from svc_monitor.client_analytics.store import HISTORY_TABLES, ClientSnapshotStore
from svc_monitor.parts import Part, Registry
from svc_monitor.pipe.pipe import Pipe
from svc_monitor.polling.clients_poll import ClientsPoller
from svc_monitor.polling.models import PollKind
from svc_monitor.services import Services


def part(registry: Registry) -> Part:
    services = registry.get(Services)
    analytics = registry.add(
        ClientAnalyticsService, ClientAnalyticsService(ClientSnapshotStore(services.db))
    )

    def poll_kinds() -> list[PollKind]:
        poller = ClientsPoller(analytics, pipe=registry.get(Pipe), live_state=services.live_state)
        return [poller.kind()]

    return Part(
        name="client analytics",
        routers=(router,),
        poll_kinds=poll_kinds,
        sample_tables=HISTORY_TABLES,
    )
