"""The latency analytics domain's part: LATENCY polled, kept and served."""

from svc_monitor.latency_analytics.api import router
from svc_monitor.latency_analytics.service import LatencyAnalyticsService
from svc_monitor.latency_analytics.store import HISTORY_TABLES, LatencyStore
from svc_monitor.parts import Part, Registry
from svc_monitor.pipe.pipe import Pipe
from svc_monitor.polling.latency_poll import LatencyPoller
from svc_monitor.polling.models import PollKind
from svc_monitor.services import Services


def part(registry: Registry) -> Part:
    db = registry.get(Services).db
    latency = registry.add(LatencyAnalyticsService, LatencyAnalyticsService(LatencyStore(db)))

    def poll_kinds() -> list[PollKind]:
        return [LatencyPoller(latency, pipe=registry.get(Pipe)).kind()]

    return Part(
        name="latency analytics",
        routers=(router,),
        poll_kinds=poll_kinds,
        history_tables=HISTORY_TABLES,
    )
