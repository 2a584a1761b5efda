"""The alert states' part: what must survive a takeover or a restart on lasting storage
(alerts firing, instances reported down), docs/features/webhooks.md#across-restarts-and-replicas."""

from svc_monitor.detection.alerts.service import SharedAlerts
from svc_monitor.detection.alerts.store import AlertStateStore
from svc_monitor.parts import Core, Part, Registry, Task


def part(registry: Registry) -> Part:
    db = registry.get(Core).db
    shared = registry.add(
        SharedAlerts, SharedAlerts(AlertStateStore(db) if db.persistent else None)
    )
    return Part(
        name="alert states",
        tasks=(Task("alert-states", shared.run),),
        stop=shared.flush,  # before the next holder reads them
    )
