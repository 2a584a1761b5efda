"""The core parts: built before the server listens (compose.py), in this order, which is
also the order their routers are included and their tasks start. The feature parts are
features.py's, imported only once the server listens."""

from collections.abc import Callable

from svc_monitor.auth import part as auth
from svc_monitor.connections import part as connections
from svc_monitor.detection.alerts import part as alerts
from svc_monitor.info_history import part as info_history
from svc_monitor.licensing import part as licensing
from svc_monitor.otlp import part as otlp
from svc_monitor.parts import Part, Registry
from svc_monitor.replicas import part as replicas
from svc_monitor.runtime_settings import part as runtime_settings
from svc_monitor.system import part as system
from svc_monitor.traces import part as traces
from svc_monitor.webhooks import part as webhooks

CORE_PARTS: tuple[Callable[[Registry], Part], ...] = (
    system.routes,
    licensing.part,
    auth.part,
    licensing.telemetry,
    connections.part,
    system.part,
    runtime_settings.part,
    info_history.part,
    webhooks.part,
    replicas.part,
    alerts.part,
    otlp.part,
    traces.part,
)

# The core parts' stop hooks, by part name, in this order (after the features' and
# before storage closes): health before the live connections (probes of hung servers),
# the OTLP transport, traces flushed (spans of exports still being written), the alert
# states flushed before the ownership is released (the next holder reads them), and the
# replica leaves.
STOP_ORDER: tuple[str, ...] = (
    "system",
    "connections",
    "otlp",
    "traces",
    "alert states",
    "replicas",
)
