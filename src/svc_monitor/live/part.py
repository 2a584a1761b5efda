"""The live reads' part: /api/metrics/* read from the instance, here or on its poller."""

from svc_monitor.live.api import router
from svc_monitor.live.service import LiveService, ObservedElsewhere
from svc_monitor.parts import Part, Registry
from svc_monitor.services import Services


def part(registry: Registry) -> Part:
    services = registry.get(Services)
    registry.add(LiveService, LiveService(services.connections))
    registry.add(
        ObservedElsewhere,
        ObservedElsewhere(services.connections, services.ownership.polled_elsewhere),
    )
    return Part(name="live", routers=(router,))
