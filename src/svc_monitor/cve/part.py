"""The CVE domain's part: versions judged from the pipe, the dataset kept fresh, served."""

from svc_monitor.cve.api import router
from svc_monitor.cve.service import CveService
from svc_monitor.cve.store import CveStore
from svc_monitor.cve.updates import DatasetSource
from svc_monitor.parts import Part, Registry, Task, Watched
from svc_monitor.prometheus.families.cve import CveCollector
from svc_monitor.services import Services


def part(registry: Registry) -> Part:
    services = registry.get(Services)
    settings, license = services.settings, services.license
    cve = registry.add(
        CveService,
        CveService(
            CveStore(services.db),
            DatasetSource(settings, services.meta, air_gapped=lambda: license.air_gapped),
            connections=services.connections,
            bus=services.bus,
            update_interval_ms=settings.CVE_DATASET_UPDATE_INTERVAL_MS,
        ),
    )
    return Part(
        name="cve",
        routers=(router,),
        tasks=(Task("cve-scans", cve.run),),
        # polled versions from INFO, pushed ones as facts
        observation_consumers=(cve,),
        facts_consumers=(cve,),
        collectors=lambda: [CveCollector(cve, registry.get(Watched).ids)],
    )
