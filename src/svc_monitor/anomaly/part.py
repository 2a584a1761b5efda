"""The anomaly domain's part: detection over the pipe, correlated groups, their routes."""

import logging

from svc_monitor.anomaly.api import router
from svc_monitor.anomaly.baseline_store import BaselineStore
from svc_monitor.anomaly.service import AnomalyService
from svc_monitor.anomaly.store import HISTORY_TABLES, AnomalyStore
from svc_monitor.licensing.models import Feature
from svc_monitor.parts import Part, Registry, Task, Watched, addresses
from svc_monitor.prometheus.families.anomaly import AnomalyCollector
from svc_monitor.prometheus.service import PrometheusService
from svc_monitor.services import Services

logger = logging.getLogger(__name__)


def part(registry: Registry) -> Part:
    s = registry.get(Services)
    db, license = s.db, s.license
    anomaly = registry.add(
        AnomalyService,
        AnomalyService(
            AnomalyStore(db),
            s.bus,
            s.settings,
            s.runtime_settings,
            allowed=lambda: license.allows(Feature.ANOMALY_DETECTION),
            baseline_store=BaselineStore(db) if db.shared else None,
        ),
    )
    # Turned off (ANOMALY_DETECTION_ENABLED), it is not in the pipe at all.
    consumers = (anomaly,) if anomaly.enabled else ()

    async def stop() -> None:
        try:  # what the next holder of each connection carries on from
            await anomaly.save_baselines(everything=True)
        except Exception as exc:
            logger.warning("anomaly baselines not saved at stop: %s", exc)

    return Part(
        name="anomaly",
        routers=(router,),
        # anomaly groups stored and published, the svc_anomaly_* summary rebuilt
        tasks=(Task("anomaly", anomaly.run),),
        observation_consumers=consumers,
        facts_consumers=consumers,
        collectors=lambda: [
            AnomalyCollector(
                anomaly,
                lambda: addresses(registry.get(Watched).all()),
                full=lambda: registry.get(PrometheusService).full_profile,
            )
        ],
        history_tables=HISTORY_TABLES,
        stop=stop,
        takeover=anomaly.carry_on,
    )
