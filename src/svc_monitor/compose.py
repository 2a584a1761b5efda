"""The object graph of one app: `build_services(settings)` builds every long-lived service
the server needs before it listens, and the pipe with every consumer it feeds.

The pipe is composed here and nowhere else (`_pipe`): reading that function tells who takes
an Observation or a fact, polled or pushed, and in which order. Its sources are built
right after it, with the pipe as an argument: the INFO poll (polling/), which the
feature domains' polls join later (features.py), and the OTLP metrics receiver
(otlp/ingest/). The feature domains that only serve routes are built by features.py.
"""

import time
from collections.abc import Callable
from dataclasses import dataclass

from svc_monitor.anomaly.service import AnomalyService
from svc_monitor.anomaly.store import AnomalyStore
from svc_monitor.auth.activity import ActivityLog
from svc_monitor.auth.broker.service import BrokerService
from svc_monitor.auth.service import AuthService
from svc_monitor.auth.store import AuthStore
from svc_monitor.commandstats.service import CommandstatsService
from svc_monitor.commandstats.store import CommandstatsStore
from svc_monitor.config import Settings, StorageType
from svc_monitor.connections.live_connections import LiveConnections
from svc_monitor.connections.service import ConnectionService
from svc_monitor.connections.store import ConnectionStore
from svc_monitor.cve.service import CveService
from svc_monitor.cve.store import CveStore
from svc_monitor.cve.updates import DatasetSource
from svc_monitor.detectors.cluster_state import ClusterStateDetector
from svc_monitor.detectors.command_latency import LatencyDetector
from svc_monitor.detectors.readings import ReadingsDetector
from svc_monitor.events import EventBus
from svc_monitor.info_history.service import MetricsService
from svc_monitor.info_history.store import MetricsStore
from svc_monitor.kit.secret_box import SecretBox
from svc_monitor.licensing.models import Feature
from svc_monitor.licensing.service import LicenseService
from svc_monitor.licensing.telemetry import UsageTelemetry
from svc_monitor.notifications.service import AlertStates
from svc_monitor.otlp.export.stats import ExportStats
from svc_monitor.otlp.export.transport import OtlpTransport
from svc_monitor.otlp.ingest.counts import IngestCounts
from svc_monitor.otlp.ingest.discovery import DiscoveredInstances
from svc_monitor.otlp.ingest.receiver import MetricsReceiver
from svc_monitor.pipe.health import InstanceHealth
from svc_monitor.pipe.live_state import LiveState
from svc_monitor.pipe.pipe import Pipe
from svc_monitor.polling.info_poll import InfoPoller
from svc_monitor.polling.supervisor import PollSupervisor
from svc_monitor.runtime_settings.service import RuntimeSettingsService
from svc_monitor.runtime_settings.store import RuntimeSettingsStore
from svc_monitor.services import Services
from svc_monitor.storage.app_meta import AppMetaStore
from svc_monitor.storage.database import Database
from svc_monitor.system.service import HealthService
from svc_monitor.system.version_check import VersionService
from svc_monitor.traces.service import TraceService
from svc_monitor.traces.store import TraceStore
from svc_monitor.webhooks.dispatcher import WebhookDispatcher
from svc_monitor.webhooks.sender import Sender
from svc_monitor.webhooks.service import WebhookService
from svc_monitor.webhooks.store import WebhookStore
from svc_monitor.webhooks.worker import DeliveryWorker


@dataclass(frozen=True, slots=True)
class _Consumers:
    """The services the pipe feeds that are not the pipe's own (live state)."""

    history: MetricsService
    commandstats: CommandstatsService
    cve: CveService
    anomaly: AnomalyService


def build_services(settings: Settings, *, clock: Callable[[], float] = time.time) -> Services:
    db = Database.from_settings(settings)
    license = LicenseService(settings, clock=clock)
    secrets = SecretBox(settings.ENCRYPTION_KEY, salt=settings.ENCRYPTION_KEK_SALT)
    live = LiveConnections(
        connect_timeout_s=settings.ENGINE_CONNECT_TIMEOUT_MS / 1000,
        command_timeout_s=settings.ENGINE_COMMAND_TIMEOUT_MS / 1000,
        tls_ca_file=str(settings.ENGINE_TLS_CA_FILE) if settings.ENGINE_TLS_CA_FILE else None,
        ssh_key_dir=settings.SVC_SSH_KEY_DIR,
    )
    meta = AppMetaStore(db)
    bus = EventBus()
    connections = ConnectionService(ConnectionStore(db, secrets), live, meta, settings, bus)
    runtime_settings = RuntimeSettingsService(RuntimeSettingsStore(db), settings, bus)
    auth_store = AuthStore(db)
    activity = ActivityLog(auth_store, retention_days=settings.ACTIVITY_RETENTION_DAYS, clock=clock)
    auth = AuthService(settings, auth_store, activity, clock=clock)
    consumers = _Consumers(
        history=MetricsService(MetricsStore(db), settings),
        commandstats=CommandstatsService(CommandstatsStore(db)),
        cve=CveService(
            CveStore(db),
            DatasetSource(settings, meta, air_gapped=lambda: license.air_gapped),
            connections=connections,
            bus=bus,
            update_interval_ms=settings.CVE_DATASET_UPDATE_INTERVAL_MS,
        ),
        anomaly=AnomalyService(
            AnomalyStore(db),
            bus,
            settings,
            runtime_settings,
            allowed=lambda: license.allows(Feature.ANOMALY_DETECTION),
        ),
    )
    live_state = LiveState()
    pipe = _pipe(live_state, consumers, bus)
    instance_health = InstanceHealth(bus)
    supervisor = PollSupervisor(
        connections=connections,
        runtime_settings=runtime_settings,
        settings=settings,
        bus=bus,
        health=instance_health,
        pipe=pipe,
        live_state=live_state,
        kinds=[InfoPoller(connections, pipe).kind()],
    )
    discovery = DiscoveredInstances(enabled=settings.OTLP_DISCOVER_INSTANCES, clock=clock)
    metrics_receiver = MetricsReceiver(
        connections=connections,
        live_state=live_state,
        pipe=pipe,
        health=instance_health,
        version_consumers=[consumers.cve],
        discovery=discovery,
        counts=IngestCounts(full_profile=settings.METRICS_EXPORT_PROFILE == "full"),
        bus=bus,
        stale_after_ms=settings.OTEL_METRICS_STALE_AFTER_MS,
        clock=clock,
    )
    sender = Sender(
        allow_loopback=not settings.is_production, allow_http=settings.NODE_ENV == "development"
    )
    webhook_store = WebhookStore(db, secrets)
    webhooks = WebhookService(
        webhook_store, sender, settings=settings, connections=connections, license=license
    )
    webhook_worker = DeliveryWorker(
        webhook_store,
        sender,
        webhooks.lookup,
        cap_history=settings.STORAGE_TYPE is StorageType.MEMORY,
    )
    webhooks.on_requeue = webhook_worker.wake
    otlp_stats = ExportStats()
    endpoint = settings.OTEL_EXPORTER_OTLP_ENDPOINT
    otlp_transport = (
        OtlpTransport(endpoint) if endpoint and settings.OTEL_TELEMETRY_ENABLED else None
    )
    event_exporter = None
    if otlp_transport is not None and settings.OTEL_EVENTS_ENABLED:
        # Imported here: the protobuf classes load only when events are exported.
        from svc_monitor.otlp.export.events import EventExporter

        event_exporter = EventExporter(bus, otlp_transport, otlp_stats, connections)
    return Services(
        settings=settings,
        db=db,
        secrets=secrets,
        meta=meta,
        live=live,
        bus=bus,
        connections=connections,
        runtime_settings=runtime_settings,
        health=HealthService(db, connections),
        versions=VersionService(settings, air_gapped=lambda: license.air_gapped),
        license=license,
        auth=auth,
        broker=BrokerService(settings, auth, clock=clock),
        telemetry=UsageTelemetry(settings, license),
        metrics=consumers.history,
        commandstats=consumers.commandstats,
        cve=consumers.cve,
        anomaly=consumers.anomaly,
        live_state=live_state,
        pipe=pipe,
        instance_health=instance_health,
        supervisor=supervisor,
        webhooks=webhooks,
        webhook_worker=webhook_worker,
        webhook_dispatcher=WebhookDispatcher(
            bus, webhook_worker, webhooks.active, connections, license, AlertStates()
        ),
        otlp_stats=otlp_stats,
        otlp_transport=otlp_transport,
        event_exporter=event_exporter,
        metrics_receiver=metrics_receiver,
        discovery=discovery,
        traces=TraceService(TraceStore(db), settings),
    )


def _pipe(live_state: LiveState, consumers: _Consumers, bus: EventBus) -> Pipe:
    """Who takes what the instances say, in order: live state first (what is true now),
    then the detectors and domains that judge or keep it.

    Readings (memory, clients, replication, slow log length), the CLUSTER INFO state and the
    mean command latency publish their events on the bus; the CVE scanner and anomaly
    detection keep their own state and publish theirs; INFO history and commandstats
    history write storage. Anomaly detection turned off (ANOMALY_DETECTION_ENABLED) is
    not in the pipe at all."""
    readings = ReadingsDetector(bus)
    anomaly = (consumers.anomaly,) if consumers.anomaly.enabled else ()
    return Pipe(
        observation_consumers=(
            live_state,
            readings,
            consumers.cve,
            *anomaly,
            consumers.history,
        ),
        facts_consumers=(
            live_state,
            readings,
            ClusterStateDetector(bus),
            consumers.commandstats,
            LatencyDetector(bus),
            *anomaly,
        ),
    )
