"""The AI Traces view's part: its routes and span retention (the service is core: the
OTLP receiver stores spans before the features load)."""

from svc_monitor.parts import Part, Registry
from svc_monitor.traces.api import router
from svc_monitor.traces.store import HISTORY_TABLES


def part(registry: Registry) -> Part:
    # spans: as fast-growing as the samples
    return Part(name="traces", routers=(router,), sample_tables=HISTORY_TABLES)
