"""The AI Traces parts: the service (core: the OTLP receiver stores spans before the
features load); and, with the features, its view's routes and span retention."""

from svc_monitor.parts import Core, Part, Registry
from svc_monitor.traces.service import TraceService
from svc_monitor.traces.store import HISTORY_TABLES, TraceStore


def part(registry: Registry) -> Part:
    core = registry.get(Core)
    traces = registry.add(TraceService, TraceService(TraceStore(core.db), core.settings))
    # spans of exports still being written, before storage closes
    return Part(name="traces", stop=traces.flush)


def feature(registry: Registry) -> Part:
    # Imported with the features: building its routes stays off the path to a first answer.
    from svc_monitor.traces.api import router

    # spans: as fast-growing as the samples
    return Part(name="traces view", routers=(router,), sample_tables=HISTORY_TABLES)
