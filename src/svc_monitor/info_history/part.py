"""INFO history's feature-phase part: the pipe's last observer, its takeover and its
retention (the service, its routes and rollups are core, served before the features)."""

from svc_monitor.info_history.store import HISTORY_TABLES
from svc_monitor.parts import Part, Registry
from svc_monitor.services import Services


def part(registry: Registry) -> Part:
    history = registry.get(Services).info_history
    return Part(
        name="info history",
        observation_consumers=(history,),  # written last, once the detectors judged it
        sample_tables=HISTORY_TABLES,
        takeover=history.carry_on,  # sampled on the previous holder's cadence
    )
