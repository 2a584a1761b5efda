"""INFO history's parts: the service, its routes and rollups (core, served before the
features load); and, once they do, the pipe's last observer, its takeover and retention."""

from svc_monitor.info_history.api import router
from svc_monitor.info_history.service import InfoHistoryService
from svc_monitor.info_history.store import HISTORY_TABLES, MetricsStore
from svc_monitor.parts import Core, Part, Registry, Task
from svc_monitor.services import Services


def part(registry: Registry) -> Part:
    core = registry.get(Core)
    history = InfoHistoryService(MetricsStore(core.db), core.settings)
    registry.add(InfoHistoryService, history)
    return Part(
        name="info history",
        routers=(router,),
        tasks=(Task("history-rollups", history.run_rollups),),
    )


def feature(registry: Registry) -> Part:
    history = registry.get(Services).info_history
    return Part(
        name="info history writer",
        observation_consumers=(history,),  # written last, once the detectors judged it
        sample_tables=HISTORY_TABLES,
        takeover=history.carry_on,  # sampled on the previous holder's cadence
    )
