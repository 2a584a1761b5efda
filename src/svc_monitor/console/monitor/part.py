"""MONITOR captures' part: their routes, storage and housekeeping task."""

from svc_monitor.console.monitor.api import router
from svc_monitor.console.monitor.service import MonitorService
from svc_monitor.console.monitor.store import HISTORY_TABLES, MonitorStore
from svc_monitor.parts import Part, Registry, Task
from svc_monitor.services import Services


def part(registry: Registry) -> Part:
    services = registry.get(Services)
    monitor = registry.add(
        MonitorService,
        MonitorService(MonitorStore(services.db), services.connections, services.settings),
    )
    return Part(
        name="monitor",
        routers=(router,),
        # Marks captures a dead process left running as failed; cancelled at shutdown, it
        # stops the running ones (their rows say "stopped") before storage closes.
        tasks=(Task("monitor", monitor.run),),
        history_tables=HISTORY_TABLES,
    )
