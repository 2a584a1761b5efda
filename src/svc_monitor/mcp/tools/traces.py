"""Stored OpenTelemetry traces of the applications that use the instances."""

from typing import Any

from pydantic import Field

from svc_monitor.mcp.api_caller import ApiCaller
from svc_monitor.mcp.output import iso, listing
from svc_monitor.mcp.tools.spec import Limited, ToolSpec
from svc_monitor.mcp.untrusted import data


class TraceParams(Limited):
    min_duration_ms: int | None = Field(
        default=None, ge=0, description="Only traces at least this long, in ms"
    )
    errors_only: bool = Field(default=False, description="Only traces with an error span")


async def traces(api: ApiCaller, params: TraceParams) -> str:
    query = {"limit": str(params.limit)}
    if params.min_duration_ms is not None:
        query["minDurationMs"] = str(params.min_duration_ms)
    if params.errors_only:
        query["status"] = "error"
    found = await api.get("/api/traces", connection=params.connection, params=query)

    def line(t: dict[str, Any]) -> str:
        error = ", error" if t.get("hasError") else ""
        return (
            f"{iso(t.get('startTimeMs'))} {data(t.get('serviceName') or None, missing='?')}"
            f" {data(t.get('rootName'))}: {t.get('durationMs')} ms, {t.get('spanCount')} spans"
            f"{error} (trace {data(t.get('traceId'), limit=64)})"
        )

    return listing("Traces, newest first", found.get("traces", []), line, limit=params.limit)


TOOLS = [
    ToolSpec(
        "traces",
        "Stored traces (OTLP) of the last hour: service, root span, duration in ms, errors.",
        traces,
        TraceParams,
    ),
]
