"""The feature domains, composed: their services, poll kinds and routers.

Imported on its own (off the event loop by the command line, see app.py), because
building these routes and schemas is most of the service's import time.
"""

from fastapi import APIRouter

from svc_monitor.audit import store as audit_store
from svc_monitor.audit.api import router as audit_router
from svc_monitor.audit.service import AuditService
from svc_monitor.client_analytics import store as client_analytics_store
from svc_monitor.client_analytics.api import router as client_analytics_router
from svc_monitor.client_analytics.service import ClientAnalyticsService
from svc_monitor.cluster.api import router as cluster_router
from svc_monitor.cluster.service import ClusterService
from svc_monitor.commandstats import store as commandstats_store
from svc_monitor.commandstats.api import router as commandstats_router
from svc_monitor.commandstats.service import CommandstatsService
from svc_monitor.config import StorageType
from svc_monitor.console.cli.api import router as cli_router
from svc_monitor.console.cli.service import CliService
from svc_monitor.console.monitor import store as monitor_store
from svc_monitor.console.monitor.api import router as monitor_router
from svc_monitor.console.monitor.service import MonitorService
from svc_monitor.detectors.cluster_state import ClusterStateDetector
from svc_monitor.detectors.config_watch import ConfigWatch
from svc_monitor.detectors.latency import LatencyDetector
from svc_monitor.latency import store as latency_store
from svc_monitor.latency.api import router as latency_router
from svc_monitor.latency.service import LatencyService
from svc_monitor.live_metrics.api import router as live_metrics_router
from svc_monitor.live_metrics.service import LiveMetricsService
from svc_monitor.metrics import store as metrics_store
from svc_monitor.polling.audit_poll import AuditPoller
from svc_monitor.polling.clients_poll import ClientsPoller
from svc_monitor.polling.cluster_poll import cluster_kind
from svc_monitor.polling.commandstats_poll import CommandstatsPoller
from svc_monitor.polling.latency_poll import LatencyPoller
from svc_monitor.polling.log_polls import LogPoller
from svc_monitor.polling.models import PollKind
from svc_monitor.prometheus.api import router as prometheus_router
from svc_monitor.services import Features, Services
from svc_monitor.slowlog import store as slowlog_store
from svc_monitor.slowlog.api import router as slowlog_router
from svc_monitor.slowlog.service import SlowlogService
from svc_monitor.storage.retention import MEMORY_ROW_CAP, HistoryRetention
from svc_monitor.traces import store as traces_store
from svc_monitor.traces.api import router as traces_router
from svc_monitor.webhooks import store as webhook_store

ROUTERS: tuple[APIRouter, ...] = (
    slowlog_router,
    audit_router,
    client_analytics_router,
    live_metrics_router,
    commandstats_router,
    latency_router,
    cluster_router,
    cli_router,
    monitor_router,
    prometheus_router,
    traces_router,
)


def build_features(services: Services) -> tuple[Features, list[PollKind]]:
    """The feature services over the core ones, and the poll kinds they add."""
    db, connections, live_state = services.db, services.connections, services.live_state
    slowlog = slowlog_store.SlowlogStore(db)
    slowlog_service = SlowlogService(slowlog, connections)
    audit = AuditService(audit_store.AuditStore(db))
    client_analytics = ClientAnalyticsService(client_analytics_store.ClientSnapshotStore(db))
    commandstats = CommandstatsService(commandstats_store.CommandstatsStore(db))
    latency = LatencyService(latency_store.LatencyStore(db))
    clusters = ClusterService(
        connections,
        live_state,
        services.observer,
        cluster_state=ClusterStateDetector(services.bus),
    )
    # Pushed cmd.calls/cmd.usec become commandstats history like polled ones.
    services.metrics_receiver.commandstats_consumers.append(
        lambda connection_id, info, at: commandstats.record(connection_id, info, captured_at=at)
    )
    kinds = [
        *LogPoller(slowlog_service, live_state=live_state, bus=services.bus).kinds(),
        AuditPoller(audit, services.bus, live_state=live_state).kind(),
        ClientsPoller(client_analytics, live_state).kind(),
        CommandstatsPoller(
            commandstats, latency=LatencyDetector(services.bus), live_state=live_state
        ).kind(),
        LatencyPoller(latency).kind(),
        cluster_kind(clusters),
        ConfigWatch(services.bus, live_state).kind(),
    ]
    features = Features(
        slowlog=slowlog_service,
        audit=audit,
        client_analytics=client_analytics,
        live_metrics=LiveMetricsService(connections, clusters),
        commandstats=commandstats,
        latency=latency,
        clusters=clusters,
        cli=CliService(
            services.settings,
            auth=services.auth,
            connections=connections,
            live=services.live,
        ),
        monitor=MonitorService(
            monitor_store.MonitorStore(db), connections, services.live, services.settings
        ),
        retention=_retention(services),
    )
    return features, kinds


def _retention(services: Services) -> HistoryRetention:
    """Every history table; the fast-growing sample stores are also swept hourly."""
    sample_tables = (
        *metrics_store.HISTORY_TABLES,
        *commandstats_store.HISTORY_TABLES,
        *client_analytics_store.HISTORY_TABLES,
        *traces_store.HISTORY_TABLES,  # spans: as fast-growing as the samples
    )
    settings = services.settings
    return HistoryRetention(
        services.db,
        [
            *sample_tables,
            *slowlog_store.HISTORY_TABLES,
            *audit_store.HISTORY_TABLES,
            *latency_store.HISTORY_TABLES,
            *monitor_store.HISTORY_TABLES,
            *webhook_store.HISTORY_TABLES,
        ],
        sample_tables=sample_tables,
        retention_days=settings.LOCAL_RETENTION_DAYS,
        row_cap=MEMORY_ROW_CAP if settings.STORAGE_TYPE is StorageType.MEMORY else None,
    )
