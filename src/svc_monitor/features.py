"""The feature domains, composed: their services, poll kinds and routers.

Imported on its own (off the event loop by the command line, see app.py), because
building these routes and schemas is most of the service's import time.
"""

from fastapi import APIRouter

from svc_monitor.anomaly import store as anomaly_store
from svc_monitor.anomaly.api import router as anomaly_router
from svc_monitor.anomaly.service import AnomalyService
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
from svc_monitor.cve import store as cve_store
from svc_monitor.cve.api import router as cve_router
from svc_monitor.cve.service import CveService
from svc_monitor.cve.updates import DatasetSource
from svc_monitor.detectors.cluster_state import ClusterStateDetector
from svc_monitor.detectors.command_latency import LatencyDetector
from svc_monitor.detectors.config_watch import ConfigWatch
from svc_monitor.forecast import store as forecast_store
from svc_monitor.forecast.api import router as forecast_router
from svc_monitor.forecast.service import ForecastService
from svc_monitor.info_history import store as metrics_store
from svc_monitor.key_analytics import store as key_analytics_store
from svc_monitor.key_analytics.api import router as key_analytics_router
from svc_monitor.key_analytics.service import KeyAnalyticsService
from svc_monitor.latency import store as latency_store
from svc_monitor.latency.api import router as latency_router
from svc_monitor.latency.service import LatencyService
from svc_monitor.licensing.tiers import Feature
from svc_monitor.live.api import router as live_metrics_router
from svc_monitor.live.service import LiveMetricsService
from svc_monitor.polling.audit_poll import AuditPoller
from svc_monitor.polling.clients_poll import ClientsPoller
from svc_monitor.polling.cluster_poll import cluster_kind
from svc_monitor.polling.commandstats_poll import CommandstatsPoller
from svc_monitor.polling.key_analytics_poll import KeyAnalyticsPoller
from svc_monitor.polling.latency_poll import LatencyPoller
from svc_monitor.polling.log_polls import LogPoller
from svc_monitor.polling.models import PollKind
from svc_monitor.prometheus.api import router as prometheus_router
from svc_monitor.prometheus.families.anomaly import AnomalyCollector
from svc_monitor.prometheus.families.forecast import ForecastCollector
from svc_monitor.prometheus.families.key_analytics import KeyAnalyticsCollector
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
    forecast_router,
    cve_router,
    key_analytics_router,
    anomaly_router,
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
    forecast = ForecastService(
        forecast_store.ForecastStore(db),
        services.metrics,
        connections,
        services.settings,
        services.bus,
    )
    services.prometheus.add(
        ForecastCollector(
            forecast,
            lambda: [
                *services.supervisor.polled_connections(),
                *services.metrics_receiver.push_connections(),
            ],
        )
    )
    cve = _cve(services)
    key_analytics = _key_analytics(services)
    anomaly = _anomaly(services)
    kinds = [
        *LogPoller(slowlog_service, live_state=live_state, bus=services.bus).kinds(),
        AuditPoller(audit, services.bus, live_state=live_state).kind(),
        ClientsPoller(client_analytics, live_state).kind(),
        CommandstatsPoller(
            commandstats, latency=LatencyDetector(services.bus), live_state=live_state
        ).kind(),
        LatencyPoller(latency, live_state=live_state).kind(),
        cluster_kind(clusters),
        ConfigWatch(services.bus, live_state).kind(),
        KeyAnalyticsPoller(
            key_analytics, allowed=lambda: services.license.allows(Feature.KEY_ANALYTICS)
        ).kind(),
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
        forecast=forecast,
        retention=_retention(services),
        cve=cve,
        key_analytics=key_analytics,
        anomaly=anomaly,
    )
    return features, kinds


def _cve(services: Services) -> CveService:
    """The CVE scanner, fed by polled INFO and by pushed versions; its families scraped."""
    settings, receiver, license = services.settings, services.metrics_receiver, services.license
    cve = CveService(
        cve_store.CveStore(services.db),
        DatasetSource(settings, services.meta, air_gapped=lambda: license.air_gapped),
        connections=services.connections,
        bus=services.bus,
        held_version=receiver.held_version,
        update_interval_ms=settings.CVE_DATASET_UPDATE_INTERVAL_MS,
    )
    services.observer.watchers.append(cve.watch)
    receiver.version_watchers.append(cve.on_pushed_version)
    services.prometheus.add(cve)
    return cve


def _key_analytics(services: Services) -> KeyAnalyticsService:
    """Key analytics (Pro) over polled connections; its families scraped."""
    analytics = KeyAnalyticsService(
        key_analytics_store.KeyAnalyticsStore(services.db),
        services.connections,
        services.live_state,
        services.settings,
    )
    services.prometheus.add(
        KeyAnalyticsCollector(
            analytics,
            lambda: {c.id: f"{c.host}:{c.port}" for c in services.supervisor.polled_connections()},
            full=lambda: services.prometheus.full_profile,
        )
    )
    return analytics


def _anomaly(services: Services) -> AnomalyService:
    """Anomaly detection (Pro) on every INFO observation, polled and pushed; its families
    scraped."""
    anomaly = AnomalyService(
        anomaly_store.AnomalyStore(services.db),
        services.bus,
        services.settings,
        services.runtime_settings,
        allowed=lambda: services.license.allows(Feature.ANOMALY_DETECTION),
    )
    if anomaly.enabled:
        services.observer.watchers.append(anomaly.watch)
        services.live_state.fact_watchers.append(anomaly.watch_facts)

    def addresses() -> dict[str, str]:
        return {
            c.id: f"{c.host}:{c.port}"
            for c in (
                *services.supervisor.polled_connections(),
                *services.metrics_receiver.push_connections(),
            )
        }

    services.prometheus.add(
        AnomalyCollector(anomaly, addresses, full=lambda: services.prometheus.full_profile)
    )
    return anomaly


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
            *key_analytics_store.HISTORY_TABLES,
            *anomaly_store.HISTORY_TABLES,
        ],
        sample_tables=sample_tables,
        retention_days=settings.LOCAL_RETENTION_DAYS,
        row_cap=MEMORY_ROW_CAP if settings.STORAGE_TYPE is StorageType.MEMORY else None,
    )
