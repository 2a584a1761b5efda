"""The feature domains, composed from their parts (each domain's part.py, parts.py), what
watches the instances (watching.py), and the Prometheus registry over them and the core.

Imported on its own (off the event loop by the command line, see app.py), because
building these routes and schemas is most of the service's import time.
"""

from collections.abc import Callable, Sequence

from svc_monitor import watching
from svc_monitor.agent_links import part as agent_links
from svc_monitor.anomaly import part as anomaly
from svc_monitor.audit import part as audit
from svc_monitor.client_analytics import part as client_analytics
from svc_monitor.cluster import part as cluster
from svc_monitor.commandstats import part as commandstats
from svc_monitor.config import StorageType
from svc_monitor.console.cli import part as cli
from svc_monitor.console.monitor import part as monitor
from svc_monitor.cve import part as cve
from svc_monitor.detection import part as detection
from svc_monitor.forecast import part as forecast
from svc_monitor.info_history import part as info_history
from svc_monitor.key_analytics import part as key_analytics
from svc_monitor.latency_analytics import part as latency_analytics
from svc_monitor.live import part as live
from svc_monitor.migration import part as migration
from svc_monitor.parts import Part, Registry, Task, Watched
from svc_monitor.pipe.pipe import Pipe
from svc_monitor.prometheus.api import router as prometheus_router
from svc_monitor.prometheus.service import PrometheusService
from svc_monitor.replicas import part as replicas
from svc_monitor.services import Features, Services
from svc_monitor.slowlog import part as slowlog
from svc_monitor.storage.retention import MEMORY_ROW_CAP, HistoryRetention
from svc_monitor.traces import part as traces
from svc_monitor.vector_search import part as vector_search
from svc_monitor.webhooks import part as webhooks

# In pipe order (the consumers), poll and INFO rider order, and the order their tasks
# start; their stop hooks run in the reverse order (app.py).
PARTS: tuple[Callable[[Registry], Part], ...] = (
    slowlog.part,
    audit.part,
    client_analytics.part,
    live.part,
    detection.readings,
    detection.cluster_state,
    commandstats.part,
    latency_analytics.part,
    detection.command_latency,
    cli.part,
    monitor.part,
    cve.part,
    forecast.part,
    anomaly.part,
    cluster.part,
    detection.config_watch,
    key_analytics.part,
    vector_search.part,
    migration.part,
    agent_links.part,
    traces.feature,
    webhooks.feature,
    replicas.feature,
    info_history.feature,
)


def build_features(services: Services) -> tuple[Features, Registry, tuple[Part, ...]]:
    """The feature parts over the core services, in order; then the pipe over their
    consumers, the sources with their polls (watching.py), the history retention over
    their tables and the Prometheus registry over their collectors. Returns the typed
    view the routes read, the registry, and every part: the sources' first, then
    retention's."""
    registry = Registry()
    registry.add(Services, services)
    parts = [build(registry) for build in PARTS]
    registry.add(Pipe, watching.build_pipe(services, parts))
    sources = watching.build_sources(registry, parts)
    everything = (sources, *parts)
    retention = _retention(registry, everything)
    prometheus = _prometheus(registry, everything)
    return registry.view(Features), registry, (sources, retention, *parts, prometheus)


def _retention(registry: Registry, parts: Sequence[Part]) -> Part:
    """Every history table; the fast-growing sample stores are also swept hourly."""
    services = registry.get(Services)
    sample_tables = tuple(t for p in parts for t in p.sample_tables)
    retention = registry.add(
        HistoryRetention,
        HistoryRetention(
            services.db,
            [*sample_tables, *(t for p in parts for t in p.history_tables)],
            sample_tables=sample_tables,
            retention_days=services.runtime_settings.retention_days,
            row_cap=MEMORY_ROW_CAP
            if services.settings.STORAGE_TYPE is StorageType.MEMORY
            else None,
        ),
    )
    # A settings row from before the window was a setting takes the environment's, once.
    start = services.runtime_settings.seed_retention
    return Part(name="retention", start=start, tasks=(Task("retention", retention.run),))


def _prometheus(registry: Registry, parts: Sequence[Part]) -> Part:
    """The registry behind the scrape and the OTLP metrics export: the connections' families
    from live state, then the parts' collectors in part order; and the export, when an
    endpoint is set (its protobuf classes load only then)."""
    services = registry.get(Services)
    watched = registry.get(Watched)
    prometheus = registry.add(
        PrometheusService,
        PrometheusService(
            watched.polled,
            services.live_state,
            services.settings,
            pushed_connections=watched.pushed,
            collectors=[c for p in parts for c in p.collectors()],
        ),
    )
    transport = services.otlp_transport
    if transport is None or not transport.exports("metrics"):
        return Part(name="prometheus", routers=(prometheus_router,))
    from svc_monitor.otlp.export.metrics import MetricsExporter

    exporter = registry.add(
        MetricsExporter,
        MetricsExporter.from_settings(
            services.settings,
            prometheus,
            transport,
            services.otlp_stats,
            instance=services.replicas.id if services.db.shared else None,
        ),
    )
    # The registry over OTLP; its first push is one interval after this start.
    task = Task("otlp-metrics-export", exporter.run)
    return Part(name="prometheus", routers=(prometheus_router,), tasks=(task,))
