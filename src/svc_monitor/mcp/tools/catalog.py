"""Every tool, in the order an assistant reads the list."""

from svc_monitor.mcp.tools import (
    admin,
    anomalies,
    clients,
    cluster,
    diagnosis,
    instances,
    keys,
    latency,
    logs,
    memory,
    migration,
    security,
    traces,
    vector,
    webhooks,
)
from svc_monitor.mcp.tools.spec import ToolSpec

TOOLS: list[ToolSpec] = [
    *diagnosis.TOOLS,
    *instances.TOOLS,
    *logs.TOOLS,
    *latency.TOOLS,
    *memory.TOOLS,
    *clients.TOOLS,
    *cluster.TOOLS,
    *security.TOOLS,
    *anomalies.TOOLS,
    *keys.TOOLS,
    *vector.TOOLS,
    *migration.TOOLS,
    *webhooks.TOOLS,
    *traces.TOOLS,
    *admin.TOOLS,
]
