"""The object graph `create_app` builds (api/dependencies.py hands it to routes).

Two typed views over what the parts registered (parts.py): `Services`, built by compose.py
from the core parts (core_parts.py) before the server listens: the core every request may
need (storage, connections, health, settings, the licence and its gates,
webhooks, INFO history and live state); and `Features`, a typed view over the registry
features.py fills from the domains' parts (parts.py, each domain's part.py): what
watches the instances (the pipe, its consumers and sources: watching.py), the feature
domains that serve routes (slow logs, audit, client analytics, live reads, latency,
clusters, key analytics, forecasts, CVEs, anomalies, the console) and the Prometheus
registry over all of them. The command line loads features just after the server starts listening,
which keeps their route and schema building out of the time to a first answer
(bench/startup.py); tests load them before the first request.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from svc_monitor.config import Settings

if TYPE_CHECKING:
    from svc_monitor.anomaly.service import AnomalyService
    from svc_monitor.audit.service import AuditService
    from svc_monitor.auth.broker.service import BrokerService
    from svc_monitor.auth.service import AuthService
    from svc_monitor.client_analytics.service import ClientAnalyticsService
    from svc_monitor.cluster.service import ClusterService
    from svc_monitor.commandstats.service import CommandstatsService
    from svc_monitor.connections.live_connections import LiveConnections
    from svc_monitor.connections.service import ConnectionService
    from svc_monitor.console.cli.service import CliService
    from svc_monitor.console.monitor.service import MonitorService
    from svc_monitor.cve.service import CveService
    from svc_monitor.detection.alerts.service import SharedAlerts
    from svc_monitor.events import EventBus
    from svc_monitor.forecast.service import ForecastService
    from svc_monitor.info_history.service import InfoHistoryService
    from svc_monitor.key_analytics.service import KeyAnalyticsService
    from svc_monitor.kit.secret_box import SecretBox
    from svc_monitor.latency_analytics.service import LatencyAnalyticsService
    from svc_monitor.licensing.service import LicenseService
    from svc_monitor.licensing.telemetry import UsageTelemetry
    from svc_monitor.live.service import LiveService, ObservedElsewhere
    from svc_monitor.otlp.export.events import EventExporter
    from svc_monitor.otlp.export.metrics import MetricsExporter
    from svc_monitor.otlp.export.stats import ExportStats
    from svc_monitor.otlp.export.transport import OtlpTransport
    from svc_monitor.otlp.ingest.discovery import DiscoveredInstances
    from svc_monitor.otlp.ingest.receiver import MetricsReceiver
    from svc_monitor.pipe.health import InstanceHealth
    from svc_monitor.pipe.live_state import LiveState
    from svc_monitor.pipe.pipe import Pipe
    from svc_monitor.polling.supervisor import PollSupervisor
    from svc_monitor.prometheus.service import PrometheusService
    from svc_monitor.replicas.change_feed import ChangeFeed
    from svc_monitor.replicas.models import Ownership
    from svc_monitor.replicas.service import ReplicaRegistry
    from svc_monitor.runtime_settings.service import RuntimeSettingsService
    from svc_monitor.slowlog.service import SlowlogService
    from svc_monitor.storage.app_meta import AppMetaStore
    from svc_monitor.storage.database import Database
    from svc_monitor.storage.retention import HistoryRetention
    from svc_monitor.system.service import HealthService
    from svc_monitor.system.version_check import VersionService
    from svc_monitor.traces.service import TraceService
    from svc_monitor.vector_search.service import VectorSearchService
    from svc_monitor.webhooks.dispatcher import WebhookDispatcher
    from svc_monitor.webhooks.service import WebhookService
    from svc_monitor.webhooks.worker import DeliveryWorker


@dataclass(frozen=True, slots=True)
class Services:
    """The core long-lived services of one app instance (no module-level singletons)."""

    settings: Settings
    clock: Callable[[], float]  # the wall clock of the licence, sessions, pushes (tests move it)
    db: "Database"
    secrets: "SecretBox"
    meta: "AppMetaStore"
    live_connections: "LiveConnections"
    bus: "EventBus"
    connections: "ConnectionService"
    runtime_settings: "RuntimeSettingsService"
    health: "HealthService"
    versions: "VersionService"
    license: "LicenseService"
    auth: "AuthService"
    broker: "BrokerService"  # third-party sign-in (auth/broker.py)
    telemetry: "UsageTelemetry"
    info_history: "InfoHistoryService"  # INFO history (info_history/)
    live_state: "LiveState"  # what the pipe last said of each connection
    webhooks: "WebhookService"
    webhook_worker: "DeliveryWorker"  # attempts, outcomes and the retry queue
    webhook_dispatcher: "WebhookDispatcher"  # bus events -> deliveries
    otlp_stats: "ExportStats"  # both OTLP exports' own outcomes (svc_otlp_export_*)
    otlp_transport: "OtlpTransport | None"  # None: no endpoint, or OTEL_TELEMETRY_ENABLED off
    event_exporter: "EventExporter | None"  # events as OTLP logs; None when that is off
    discovery: "DiscoveredInstances"  # unregistered OTLP pushers, offered for registration
    traces: "TraceService"  # POST /v1/traces: stored spans, the AI Traces view (traces/)
    replicas: "ReplicaRegistry"  # the processes sharing this storage (replicas/)
    ownership: "Ownership"  # which of them polls which connection (replicas/ownership.py)
    changes: "ChangeFeed"  # changes made here reach the other replicas at once
    shared_alerts: "SharedAlerts"  # alerts firing, kept for whoever takes a connection over


@dataclass(frozen=True, slots=True)
class Features:
    """The feature domains' services, read from the parts' registry (`Registry.view`: each
    field is the service registered under the type its annotation names)."""

    slowlog: "SlowlogService"
    audit: "AuditService"
    client_analytics: "ClientAnalyticsService"
    live: "LiveService"  # live reads of /api/metrics/* (live/)
    # The latest-poll views of connections another replica polls, read live (live/)
    observed_elsewhere: "ObservedElsewhere"
    latency_analytics: "LatencyAnalyticsService"
    cluster: "ClusterService"
    cli: "CliService"  # the browser CLI's sessions (console/cli/)
    monitor: "MonitorService"  # MONITOR captures (console/monitor/)
    forecast: "ForecastService"  # capacity forecasts and their limit alerts (forecast/)
    key_analytics: "KeyAnalyticsService"  # key patterns, sizes, hot keys (key_analytics/)
    vector_search: "VectorSearchService"  # search indexes and their history (vector_search/)
    retention: "HistoryRetention"
    commandstats: "CommandstatsService"  # commandstats history (commandstats/)
    cve: "CveService"  # CVE and end-of-life scanning (cve/)
    anomaly: "AnomalyService"  # anomaly detection and correlated groups (anomaly/)
    pipe: "Pipe"  # where every observation and fact enters (watching.py lists its consumers)
    instance_health: "InstanceHealth"
    supervisor: "PollSupervisor"
    metrics_receiver: "MetricsReceiver"  # POST /v1/external/metrics: push connections' pipe
    prometheus: "PrometheusService"  # the registry: scrape and OTLP export
    metrics_exporter: "MetricsExporter | None"  # the registry over OTLP; None when export is off
