"""Anomalies, their correlated groups, forecasts, and resolving an anomaly."""

from collections.abc import Callable
from typing import Any, Literal

from pydantic import Field

from svc_monitor.mcp.api_caller import ApiCaller
from svc_monitor.mcp.output import iso, listing, mb, number
from svc_monitor.mcp.tools.spec import Limited, Scoped, ToolSpec

_HOUR_MS = 3_600_000


class AnomalyParams(Limited):
    unresolved_only: bool = Field(default=True, description="Only anomalies still open")


class ForecastParams(Scoped):
    metric: Literal["usedMemory", "opsPerSec", "cpuTotal", "memFragmentation"] = Field(
        default="usedMemory", description="The metric to project"
    )


class ResolveParams(Scoped):
    kind: Literal["event", "group"] = Field(default="event", description="An event or a group")
    id: int = Field(ge=1, description="The anomaly event's or group's id")


async def anomalies(api: ApiCaller, params: AnomalyParams) -> str:
    query = {"limit": str(params.limit)}
    if params.unresolved_only:
        query["resolved"] = "false"
    events = await api.get("/api/anomaly/events", connection=params.connection, params=query)

    def line(e: dict[str, Any]) -> str:
        return (
            f"#{e.get('id')} {iso(e.get('timestamp'))} {e.get('severity')} {e.get('anomalyType')}"
            f" of {e.get('metric')}: {number(e.get('value'))} against baseline"
            f" {number(e.get('baseline'))} (z {number(e.get('zScore'))}){_resolved(e)}"
        )

    return listing("Anomalies, newest first", events, line, limit=params.limit)


async def anomaly_groups(api: ApiCaller, params: AnomalyParams) -> str:
    query = {"limit": str(params.limit)}
    if params.unresolved_only:
        query["resolved"] = "false"
    groups = await api.get("/api/anomaly/groups", connection=params.connection, params=query)

    def line(g: dict[str, Any]) -> str:
        return (
            f"#{g.get('id')} {iso(g.get('timestamp'))} {g.get('severity')} {g.get('pattern')}"
            f" ({g.get('eventCount')} events: {', '.join(g.get('metrics') or [])}):"
            f" {g.get('diagnosis')} Next: {g.get('recommendation')}{_resolved(g)}"
        )

    return listing("Correlated anomaly groups", groups, line, limit=params.limit)


def _resolved(entry: dict[str, Any]) -> str:
    return f" [resolved {iso(entry.get('resolvedAt'))}]" if entry.get("resolved") else ""


async def forecast(api: ApiCaller, params: ForecastParams) -> str:
    found = await api.get(
        f"/api/metric-forecasting/{params.metric}/forecast", connection=params.connection
    )
    unit = _UNITS[params.metric]
    lines = [
        f"{params.metric}: now {unit(found.get('currentValue'))}, trend"
        f" {found.get('trendDirection')} ({unit(found.get('growthRate'))} per hour,"
        f" {number(found.get('growthPercent'))}% over {_hours(found.get('windowMs'))},"
        f" {found.get('dataPointCount')} points)",
    ]
    if found.get("ceiling") is None:
        lines.append("no ceiling: a trend only (set maxmemory or a ceiling for a forecast)")
    else:
        lines.append(f"ceiling {unit(found.get('ceiling'))}: " + _time_to_limit(found))
    return "\n".join(lines)


_UNITS: dict[str, Callable[[Any], str]] = {
    "usedMemory": mb,
    "opsPerSec": lambda v: number(v, "ops/s"),
    "cpuTotal": lambda v: number(v, "% CPU"),
    "memFragmentation": lambda v: number(v, "(RSS / used)"),
}


def _hours(window_ms: Any) -> str:
    return f"{(window_ms or 0) / _HOUR_MS:.1f} h"


def _time_to_limit(found: dict[str, Any]) -> str:
    eta = found.get("timeToLimitMs")
    if eta is None:
        return "not reached at the current trend"
    if eta == 0:
        return "already reached"
    low, high = found.get("timeToLimitLowMs"), found.get("timeToLimitHighMs")
    span = ""
    if low is not None and high is not None:
        span = f" (between {low / _HOUR_MS:.1f} h and {high / _HOUR_MS:.1f} h)"
    return f"reached in about {eta / _HOUR_MS:.1f} h{span}"


async def resolve_anomaly(api: ApiCaller, params: ResolveParams) -> str:
    path = f"/api/anomaly/{params.kind}s/{params.id}/resolve"
    await api.send("POST", path, connection=params.connection)
    return f"Anomaly {params.kind} #{params.id} marked resolved."


TOOLS = [
    ToolSpec(
        "anomalies",
        "Detected anomalies (spikes and drops against a learnt baseline): metric, value, "
        "baseline, severity, time. Needs the Pro tier.",
        anomalies,
        AnomalyParams,
    ),
    ToolSpec(
        "anomaly_groups",
        "Anomalies that happened together, with a diagnosis and a recommendation. Needs Pro.",
        anomaly_groups,
        AnomalyParams,
    ),
    ToolSpec(
        "forecast",
        "A metric's trend and, against its ceiling (maxmemory for memory), the time until "
        "it is reached with a range.",
        forecast,
        ForecastParams,
    ),
    ToolSpec(
        "resolve_anomaly",
        "Mark an anomaly event or group resolved. Admin only.",
        resolve_anomaly,
        ResolveParams,
        admin=True,
    ),
]
