"""The feature domains, composed: their services, poll kinds and routers, what watches the
instances (watching.py), and the Prometheus registry over them and the core.

Imported on its own (off the event loop by the command line, see app.py), because
building these routes and schemas is most of the service's import time.
"""

from collections.abc import Sequence
from typing import TYPE_CHECKING

from fastapi import APIRouter

from svc_monitor.anomaly import store as anomaly_store
from svc_monitor.anomaly.api import router as anomaly_router
from svc_monitor.audit import store as audit_store
from svc_monitor.audit.api import router as audit_router
from svc_monitor.audit.service import AuditService
from svc_monitor.client_analytics import store as client_analytics_store
from svc_monitor.client_analytics.api import router as client_analytics_router
from svc_monitor.client_analytics.service import ClientAnalyticsService
from svc_monitor.cluster.api import live_router as cluster_live_router, router as cluster_router
from svc_monitor.cluster.service import ClusterService
from svc_monitor.commandstats import store as commandstats_store
from svc_monitor.commandstats.api import router as commandstats_router
from svc_monitor.config import StorageType
from svc_monitor.connections.models import Connection
from svc_monitor.console.cli.api import router as cli_router
from svc_monitor.console.cli.service import CliService
from svc_monitor.console.monitor import store as monitor_store
from svc_monitor.console.monitor.api import router as monitor_router
from svc_monitor.console.monitor.service import MonitorService
from svc_monitor.cve.api import router as cve_router
from svc_monitor.detection.config_watch import ConfigWatch
from svc_monitor.forecast import store as forecast_store
from svc_monitor.forecast.api import router as forecast_router
from svc_monitor.forecast.service import ForecastService
from svc_monitor.info_history import store as info_history_store
from svc_monitor.key_analytics import store as key_analytics_store
from svc_monitor.key_analytics.api import router as key_analytics_router
from svc_monitor.key_analytics.service import KeyAnalyticsService
from svc_monitor.latency_analytics import store as latency_store
from svc_monitor.latency_analytics.api import router as latency_router
from svc_monitor.latency_analytics.service import LatencyAnalyticsService
from svc_monitor.licensing.models import Feature
from svc_monitor.live.api import router as live_router
from svc_monitor.live.service import LiveService, ObservedElsewhere
from svc_monitor.polling.audit_poll import AuditPoller
from svc_monitor.polling.clients_poll import ClientsPoller
from svc_monitor.polling.cluster_poll import ClusterPoller
from svc_monitor.polling.commandstats_poll import CommandstatsPoller
from svc_monitor.polling.config_watch_poll import config_watch_kind, config_watch_rider
from svc_monitor.polling.info_rides import InfoRides
from svc_monitor.polling.key_analytics_poll import KeyAnalyticsPoller
from svc_monitor.polling.latency_poll import LatencyPoller
from svc_monitor.polling.log_polls import LogPoller
from svc_monitor.polling.size_log_gate import SizeLogGate
from svc_monitor.prometheus.api import router as prometheus_router
from svc_monitor.prometheus.families.anomaly import AnomalyCollector
from svc_monitor.prometheus.families.cve import CveCollector
from svc_monitor.prometheus.families.forecast import ForecastCollector
from svc_monitor.prometheus.families.key_analytics import KeyAnalyticsCollector
from svc_monitor.prometheus.families.replica import ReplicaCollector
from svc_monitor.prometheus.service import PrometheusService
from svc_monitor.services import Features, Services
from svc_monitor.slowlog import store as slowlog_store
from svc_monitor.slowlog.api import router as slowlog_router
from svc_monitor.slowlog.service import SlowlogService
from svc_monitor.storage.retention import MEMORY_ROW_CAP, HistoryRetention
from svc_monitor.traces import store as traces_store
from svc_monitor.traces.api import router as traces_router
from svc_monitor.watching import Consumers, Sources, build_consumers, build_pipe, build_sources
from svc_monitor.webhooks import store as webhook_store

if TYPE_CHECKING:
    from svc_monitor.otlp.export.metrics import MetricsExporter

ROUTERS: tuple[APIRouter, ...] = (
    slowlog_router,
    audit_router,
    client_analytics_router,
    live_router,
    cluster_live_router,
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


def build_features(services: Services) -> Features:
    """The feature services over the core ones, what watches the instances (watching.py:
    the pipe, its consumers, the polls with the feature domains' kinds and the OTLP
    receiver), and the Prometheus registry over everything (its collectors listed once,
    in scrape order)."""
    db, connections, live_state = services.db, services.connections, services.live_state
    bus, settings = services.bus, services.settings
    consumers = build_consumers(services)
    pipe = build_pipe(services, consumers)
    slowlog = SlowlogService(slowlog_store.SlowlogStore(db), connections)
    audit = AuditService(audit_store.AuditStore(db), bus)
    client_analytics = ClientAnalyticsService(client_analytics_store.ClientSnapshotStore(db))
    latency_analytics = LatencyAnalyticsService(latency_store.LatencyStore(db))
    cluster = ClusterService(connections, live_state)
    forecast = ForecastService(
        forecast_store.ForecastStore(db), services.info_history, connections, settings, bus
    )
    key_analytics = KeyAnalyticsService(
        key_analytics_store.KeyAnalyticsStore(db), connections, live_state, settings
    )
    commandstats_poller = CommandstatsPoller(pipe, settings)
    config_watch = ConfigWatch(bus, live_state)
    # INFO commandstats read along with INFO where the engine allows it (info_rides.py).
    rides = InfoRides(
        [commandstats_poller.rider(), config_watch_rider(config_watch, pipe, settings)]
    )
    sources = build_sources(
        services,
        pipe,
        consumers,
        rides=rides,
        kinds=[
            *LogPoller(
                slowlog,
                pipe=pipe,
                live_state=live_state,
                gate=SizeLogGate(
                    live_state,
                    parameter=config_watch.parameter,
                    resets=slowlog.commandlog_resets,
                ),
            ).kinds(),
            AuditPoller(audit, pipe=pipe).kind(),
            ClientsPoller(client_analytics, pipe=pipe, live_state=live_state).kind(),
            commandstats_poller.kind(rides),
            LatencyPoller(latency_analytics, pipe=pipe).kind(),
            ClusterPoller(cluster, pipe).kind(),
            config_watch_kind(config_watch, pipe, rides),
            KeyAnalyticsPoller(
                key_analytics, allowed=lambda: services.license.allows(Feature.KEY_ANALYTICS)
            ).kind(),
        ],
    )
    prometheus = _prometheus(services, consumers, sources, forecast, key_analytics)
    features = Features(
        slowlog=slowlog,
        audit=audit,
        client_analytics=client_analytics,
        live=LiveService(connections),
        observed_elsewhere=ObservedElsewhere(connections, services.ownership.polled_elsewhere),
        latency_analytics=latency_analytics,
        cluster=cluster,
        cli=CliService(settings, auth=services.auth, connections=connections),
        monitor=MonitorService(monitor_store.MonitorStore(db), connections, settings),
        forecast=forecast,
        retention=_retention(services),
        key_analytics=key_analytics,
        commandstats=consumers.commandstats,
        cve=consumers.cve,
        anomaly=consumers.anomaly,
        pipe=pipe,
        instance_health=sources.health,
        supervisor=sources.supervisor,
        metrics_receiver=sources.metrics_receiver,
        prometheus=prometheus,
        metrics_exporter=_metrics_exporter(services, prometheus),
    )
    return features


def _prometheus(
    services: Services,
    consumers: Consumers,
    sources: Sources,
    forecast: ForecastService,
    key_analytics: KeyAnalyticsService,
) -> PrometheusService:
    """The registry behind the scrape and the OTLP metrics export: the connections' families
    from live state, then these collectors' (prometheus/families/ and the exporters')."""
    supervisor, receiver = sources.supervisor, sources.metrics_receiver

    def watched() -> list[Connection]:
        return [*supervisor.polled_connections(), *receiver.push_connections()]

    def addresses(connections: Sequence[Connection]) -> dict[str, str]:
        return {c.id: f"{c.host}:{c.port}" for c in connections}

    prometheus = PrometheusService(
        supervisor.polled_connections,
        services.live_state,
        services.settings,
        pushed_connections=receiver.push_connections,
        collectors=[
            services.otlp_stats,
            receiver.counts,
            ForecastCollector(forecast, watched),
            CveCollector(consumers.cve, lambda: {c.id for c in watched()}),
            ReplicaCollector(services.replicas, lambda: len(supervisor.polled_connections())),
            KeyAnalyticsCollector(
                key_analytics,
                lambda: addresses(supervisor.polled_connections()),
                full=lambda: prometheus.full_profile,
            ),
            AnomalyCollector(
                consumers.anomaly,
                lambda: addresses(watched()),
                full=lambda: prometheus.full_profile,
            ),
        ],
    )
    return prometheus


def _metrics_exporter(
    services: Services, prometheus: PrometheusService
) -> "MetricsExporter | None":
    """The registry over OTLP, when an endpoint is set (its protobuf classes load only then)."""
    if services.otlp_transport is None or not services.otlp_transport.exports("metrics"):
        return None
    from svc_monitor.otlp.export.metrics import MetricsExporter

    return MetricsExporter.from_settings(
        services.settings,
        prometheus,
        services.otlp_transport,
        services.otlp_stats,
        instance=services.replicas.id if services.db.shared else None,
    )


def _retention(services: Services) -> HistoryRetention:
    """Every history table; the fast-growing sample stores are also swept hourly."""
    sample_tables = (
        *info_history_store.HISTORY_TABLES,
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
        retention_days=services.runtime_settings.retention_days,
        row_cap=MEMORY_ROW_CAP if settings.STORAGE_TYPE is StorageType.MEMORY else None,
    )
