"""What watches the instances: the pipe with every consumer it feeds, and its sources.

Composed here and nowhere else: `_pipe` tells who takes an Observation or a fact, polled
or pushed, and in which order; the sources are built after it, with the pipe as an
argument: the poll supervisor with every poll kind (INFO here, the feature domains' from
features.py) and the OTLP metrics receiver (otlp/ingest/). Built with the feature domains
(features.py), right after the server listens.
"""

from collections.abc import Sequence
from dataclasses import dataclass

from svc_monitor.anomaly.baseline_store import BaselineStore
from svc_monitor.anomaly.service import AnomalyService
from svc_monitor.anomaly.store import AnomalyStore
from svc_monitor.commandstats.service import CommandstatsService
from svc_monitor.commandstats.store import CommandstatsStore
from svc_monitor.cve.service import CveService
from svc_monitor.cve.store import CveStore
from svc_monitor.cve.updates import DatasetSource
from svc_monitor.detection.alerts.service import AlertStates
from svc_monitor.detection.cluster_state import ClusterStateDetector
from svc_monitor.detection.command_latency import LatencyDetector
from svc_monitor.detection.readings import ReadingsDetector
from svc_monitor.licensing.models import Feature
from svc_monitor.otlp.ingest.counts import IngestCounts
from svc_monitor.otlp.ingest.receiver import MetricsReceiver
from svc_monitor.pipe.health import InstanceHealth
from svc_monitor.pipe.pipe import Pipe
from svc_monitor.polling.info_poll import InfoPoller
from svc_monitor.polling.info_rides import InfoRides
from svc_monitor.polling.models import PollKind
from svc_monitor.polling.supervisor import PollSupervisor
from svc_monitor.services import Services


@dataclass(frozen=True, slots=True)
class Consumers:
    """The domain services the pipe feeds besides live state and INFO history."""

    commandstats: CommandstatsService
    cve: CveService
    anomaly: AnomalyService


@dataclass(frozen=True, slots=True)
class Sources:
    """What feeds the pipe, and the up/down state their failures and pushes decide."""

    health: InstanceHealth
    supervisor: PollSupervisor
    metrics_receiver: MetricsReceiver


def build_consumers(services: Services) -> Consumers:
    db, settings, license = services.db, services.settings, services.license
    return Consumers(
        commandstats=CommandstatsService(CommandstatsStore(db)),
        cve=CveService(
            CveStore(db),
            DatasetSource(settings, services.meta, air_gapped=lambda: license.air_gapped),
            connections=services.connections,
            bus=services.bus,
            update_interval_ms=settings.CVE_DATASET_UPDATE_INTERVAL_MS,
        ),
        anomaly=AnomalyService(
            AnomalyStore(db),
            services.bus,
            settings,
            services.runtime_settings,
            allowed=lambda: license.allows(Feature.ANOMALY_DETECTION),
            baseline_store=BaselineStore(db) if db.shared else None,
        ),
    )


def build_pipe(services: Services, consumers: Consumers) -> Pipe:
    """Who takes what the instances say, in order: live state first (what is true now),
    then the detectors and domains that judge or keep it.

    Readings (memory, clients, replication, slow log length), the CLUSTER INFO state and the
    mean command latency publish their events on the bus; the CVE scanner (polled versions
    from INFO, pushed ones as facts) and anomaly detection keep their own state and publish
    theirs; INFO history and commandstats
    history write storage. Anomaly detection turned off (ANOMALY_DETECTION_ENABLED) is
    not in the pipe at all."""
    live_state, bus = services.live_state, services.bus
    readings = ReadingsDetector(bus)
    anomaly = (consumers.anomaly,) if consumers.anomaly.enabled else ()
    return Pipe(
        observation_consumers=(
            live_state,
            readings,
            consumers.cve,
            *anomaly,
            services.info_history,
        ),
        facts_consumers=(
            live_state,
            readings,
            ClusterStateDetector(bus),
            consumers.commandstats,
            LatencyDetector(bus),
            consumers.cve,
            *anomaly,
        ),
        # What a poll brings back after this replica lost its lease goes no further.
        fenced=services.ownership.fenced,
        # Every consumer has read it: the values none of them could keep are counted.
        judged=live_state.judged,
    )


def build_sources(
    services: Services,
    pipe: Pipe,
    consumers: Consumers,
    *,
    kinds: Sequence[PollKind],
    rides: InfoRides | None = None,
) -> Sources:
    """The poll supervisor with the INFO poll (carrying `rides`) and `kinds` (the feature
    domains' polls), and the OTLP metrics receiver."""
    settings, connections = services.settings, services.connections
    shared = services.shared_alerts
    health = InstanceHealth(services.bus, on_change=shared.health_changed)
    webhook_alerts = services.webhook_dispatcher.alerts
    exporter = services.event_exporter

    def alerts_of(consumer: str) -> AlertStates:
        if exporter is not None and consumer == exporter.consumer:
            return exporter.alerts
        return webhook_alerts

    async def carry_on(connection_ids: list[str]) -> None:
        await shared.restore(connection_ids, down=health.restore_down, alerts=alerts_of)
        await services.info_history.carry_on(connection_ids)
        await consumers.anomaly.carry_on(connection_ids)

    supervisor = PollSupervisor(
        connections=connections,
        runtime_settings=services.runtime_settings,
        settings=settings,
        bus=services.bus,
        health=health,
        pipe=pipe,
        live_state=services.live_state,
        ownership=services.ownership,
        # Taken over from another replica, or polled again after a restart on lasting
        # storage: carry on from the alerts sent before.
        carry_on=carry_on if shared.enabled else None,
        kinds=[InfoPoller(connections, pipe, rides).kind(), *kinds],
    )
    receiver = MetricsReceiver(
        connections=connections,
        pipe=pipe,
        health=health,
        discovery=services.discovery,
        counts=IngestCounts(full_profile=settings.METRICS_EXPORT_PROFILE == "full"),
        bus=services.bus,
        stale_after_ms=settings.OTEL_METRICS_STALE_AFTER_MS,
        clock=services.clock,
    )
    return Sources(health, supervisor, receiver)
