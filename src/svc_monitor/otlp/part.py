"""OTLP's part: the receivers (spans and pushed metrics, at the root) and the collector
configuration routes, the export transport and its counters, and the events exported as
OTLP logs when that is on."""

from svc_monitor.connections.service import ConnectionService
from svc_monitor.detection.alerts.service import AlertStates, SharedAlerts
from svc_monitor.otlp.export.exporter_options import SIGNALS, SignalOptions, signal_options
from svc_monitor.otlp.export.stats import ExportStats
from svc_monitor.otlp.export.transport import OtlpTransport
from svc_monitor.otlp.ingest.api import router as ingest_router
from svc_monitor.otlp.ingest.collector_config_api import router as config_router
from svc_monitor.otlp.ingest.discovery import DiscoveredInstances
from svc_monitor.parts import Core, Part, Registry, Task


def part(registry: Registry) -> Part:
    core = registry.get(Core)
    settings = core.settings
    stats = registry.add(ExportStats, ExportStats())
    registry.add(
        DiscoveredInstances,
        DiscoveredInstances(enabled=settings.OTLP_DISCOVER_INSTANCES, clock=core.clock),
    )
    options: dict[str, SignalOptions] = {s: signal_options(settings, s) for s in SIGNALS}
    if not settings.OTEL_TELEMETRY_ENABLED or not any(o.url for o in options.values()):
        return Part(name="otlp", routers=(config_router,), root_routers=(ingest_router,))
    transport = registry.add(
        OtlpTransport, OtlpTransport(settings.OTEL_EXPORTER_OTLP_ENDPOINT, options=options)
    )
    tasks: tuple[Task, ...] = ()
    if transport.exports("logs") and settings.OTEL_EVENTS_ENABLED:
        # Imported here: the protobuf classes load only when events are exported.
        from svc_monitor.otlp.export.events import EventExporter

        def exporter() -> EventExporter:
            shared = registry.get(SharedAlerts)
            return EventExporter(
                core.bus,
                transport,
                stats,
                registry.get(ConnectionService),
                alerts=AlertStates(on_change=shared.threshold_changed),
            )

        registry.provide(EventExporter, exporter)
        tasks = (Task("otlp-event-export", lambda: registry.get(EventExporter).run()),)
    return Part(
        name="otlp",
        routers=(config_router,),
        root_routers=(ingest_router,),
        tasks=tasks,
        stop=transport.close,
    )
