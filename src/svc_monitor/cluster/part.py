"""The cluster domain's part: CLUSTER NODES and slots polled, live reads, its routes."""

from svc_monitor.cluster.api import live_router, router
from svc_monitor.cluster.service import ClusterService
from svc_monitor.parts import Part, Registry
from svc_monitor.pipe.pipe import Pipe
from svc_monitor.polling.cluster_poll import ClusterPoller
from svc_monitor.polling.cluster_slowlog_poll import ClusterSlowlogPoller
from svc_monitor.polling.models import PollKind
from svc_monitor.services import Services
from svc_monitor.slowlog.service import SlowlogService


def part(registry: Registry) -> Part:
    services = registry.get(Services)
    cluster = registry.add(
        ClusterService, ClusterService(services.connections, services.live_state)
    )

    def poll_kinds() -> list[PollKind]:
        return [
            ClusterPoller(cluster, registry.get(Pipe)).kind(),
            ClusterSlowlogPoller(cluster, registry.get(SlowlogService)).kind(),
        ]

    return Part(
        name="cluster",
        routers=(live_router, router),
        poll_kinds=poll_kinds,
        stop=cluster.close,
    )
