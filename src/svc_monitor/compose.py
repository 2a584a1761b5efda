"""The core of one app's object graph: `build_services(settings)` builds every long-lived
service the server needs before it listens (storage, connections, settings, users, the
licence, webhooks, INFO history and live state). What watches the instances (the pipe,
its consumers and its sources: watching.py) and the feature domains (features.py) are
built right after the server listens, off the path to its first answer.
"""

import time
from collections.abc import Callable

from svc_monitor.auth.activity import ActivityLog
from svc_monitor.auth.broker.service import BrokerService
from svc_monitor.auth.service import AuthService
from svc_monitor.auth.store import AuthStore
from svc_monitor.config import Settings, StorageType
from svc_monitor.connections.live_connections import LiveConnections
from svc_monitor.connections.service import ConnectionService
from svc_monitor.connections.store import ConnectionStore
from svc_monitor.detection.alerts.service import AlertStates, SharedAlerts
from svc_monitor.detection.alerts.store import AlertStateStore
from svc_monitor.events import EventBus
from svc_monitor.info_history.service import InfoHistoryService
from svc_monitor.info_history.store import MetricsStore
from svc_monitor.kit.secret_box import SecretBox
from svc_monitor.licensing.service import LicenseService
from svc_monitor.licensing.store import SharedLicenseStore
from svc_monitor.licensing.telemetry import UsageTelemetry
from svc_monitor.otlp.export.exporter_options import SIGNALS, SignalOptions, signal_options
from svc_monitor.otlp.export.stats import ExportStats
from svc_monitor.otlp.export.transport import OtlpTransport
from svc_monitor.otlp.ingest.discovery import DiscoveredInstances
from svc_monitor.pipe.live_state import LiveState
from svc_monitor.replicas.change_feed import ChangeFeed
from svc_monitor.replicas.lease_store import LeaseStore
from svc_monitor.replicas.models import Ownership
from svc_monitor.replicas.ownership import LeasedOwnership, SoleOwnership
from svc_monitor.replicas.service import ReplicaRegistry
from svc_monitor.replicas.store import ReplicaStore
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


def build_services(settings: Settings, *, clock: Callable[[], float] = time.time) -> Services:
    db = Database.from_settings(settings)
    license = LicenseService(
        settings, clock=clock, shared=SharedLicenseStore(db) if db.shared else None
    )
    secrets = SecretBox(settings.ENCRYPTION_KEY, salt=settings.ENCRYPTION_KEK_SALT)
    live_connections = LiveConnections(
        connect_timeout_s=settings.ENGINE_CONNECT_TIMEOUT_MS / 1000,
        command_timeout_s=settings.ENGINE_COMMAND_TIMEOUT_MS / 1000,
        tls_ca_file=str(settings.ENGINE_TLS_CA_FILE) if settings.ENGINE_TLS_CA_FILE else None,
        ssh_key_dir=settings.SVC_SSH_KEY_DIR,
    )
    meta = AppMetaStore(db)
    bus = EventBus()
    connections = ConnectionService(
        ConnectionStore(db, secrets), live_connections, meta, settings, bus
    )
    runtime_settings = RuntimeSettingsService(RuntimeSettingsStore(db), settings, bus)
    auth_store = AuthStore(db)
    activity = ActivityLog(auth_store, retention_days=settings.ACTIVITY_RETENTION_DAYS, clock=clock)
    auth = AuthService(settings, auth_store, activity, clock=clock)
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
    export_options: dict[str, SignalOptions] = {s: signal_options(settings, s) for s in SIGNALS}
    otlp_transport = (
        OtlpTransport(settings.OTEL_EXPORTER_OTLP_ENDPOINT, options=export_options)
        if settings.OTEL_TELEMETRY_ENABLED and any(o.url for o in export_options.values())
        else None
    )
    # What must survive a takeover or a restart on lasting storage: alerts firing,
    # instances reported down (docs/features/webhooks.md#across-restarts-and-replicas).
    shared_alerts = SharedAlerts(AlertStateStore(db) if db.persistent else None)
    webhook_alerts = AlertStates(on_change=shared_alerts.threshold_changed)
    # A webhook deleted, here or (on its next reload) on another replica: its alerts go.
    webhooks.on_gone = lambda ids: shared_alerts.forget_webhooks(ids, webhook_alerts)
    event_exporter = None
    if (
        otlp_transport is not None
        and otlp_transport.exports("logs")
        and settings.OTEL_EVENTS_ENABLED
    ):
        # Imported here: the protobuf classes load only when events are exported.
        from svc_monitor.otlp.export.events import EventExporter

        event_exporter = EventExporter(
            bus,
            otlp_transport,
            otlp_stats,
            connections,
            alerts=AlertStates(on_change=shared_alerts.threshold_changed),
        )
    live_state = LiveState()
    replicas = ReplicaRegistry(ReplicaStore(db), settings, clock=clock)
    ownership: Ownership = (
        LeasedOwnership(LeaseStore(db), replicas, settings)
        if db.shared
        else SoleOwnership(replicas.id)  # one process per memory or SQLite store
    )
    changes = ChangeFeed(db, bus, replicas.id, shared=db.kind is StorageType.POSTGRES)
    webhooks.on_change = lambda: changes.announce("webhooks")
    changes.on("webhooks", webhooks.reload)
    license.on_change = lambda: changes.announce("license")
    changes.on("license", license.adopt_shared)
    return Services(
        settings=settings,
        clock=clock,
        db=db,
        secrets=secrets,
        meta=meta,
        live_connections=live_connections,
        bus=bus,
        connections=connections,
        runtime_settings=runtime_settings,
        health=HealthService(db, connections, live_state),
        versions=VersionService(settings, air_gapped=lambda: license.air_gapped),
        license=license,
        auth=auth,
        broker=BrokerService(settings, auth, clock=clock),
        telemetry=UsageTelemetry(settings, license),
        info_history=InfoHistoryService(MetricsStore(db), settings),
        live_state=live_state,
        webhooks=webhooks,
        webhook_worker=webhook_worker,
        webhook_dispatcher=WebhookDispatcher(
            bus,
            webhook_worker,
            webhooks.active,
            connections,
            license,
            webhook_alerts,
            may_deliver=webhooks.may_deliver,
            alerts_stored=shared_alerts.flush,
        ),
        otlp_stats=otlp_stats,
        otlp_transport=otlp_transport,
        event_exporter=event_exporter,
        discovery=DiscoveredInstances(enabled=settings.OTLP_DISCOVER_INSTANCES, clock=clock),
        traces=TraceService(TraceStore(db), settings),
        replicas=replicas,
        ownership=ownership,
        changes=changes,
        shared_alerts=shared_alerts,
    )
