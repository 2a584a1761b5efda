"""LATENCY LATEST, an event's history, and LATENCY DOCTOR."""

from typing import Any

from pydantic import Field

from svc_monitor.mcp.api_caller import ApiCaller
from svc_monitor.mcp.output import REPORT_CHARS, iso, listing, number
from svc_monitor.mcp.tools.spec import Limited, Scoped, ToolSpec
from svc_monitor.mcp.untrusted import block, data


class EventParams(Limited):
    event: str = Field(
        min_length=1,
        max_length=64,
        pattern=r"^[A-Za-z0-9_-]+$",
        description="Latency event name, as latency_latest lists them (e.g. command)",
    )


async def latency_latest(api: ApiCaller, params: Scoped) -> str:
    events = await api.get("/api/metrics/latency/latest", connection=params.connection)

    def line(event: dict[str, Any]) -> str:
        return (
            f"{data(event.get('eventName'))}: latest {number(event.get('latestMs'))} ms at"
            f" {iso(event.get('timestamp'))}, max {number(event.get('maxMs'))} ms"
        )

    return listing("Latency events (LATENCY LATEST)", events, line, empty="no spikes recorded")


async def latency_history(api: ApiCaller, params: EventParams) -> str:
    points = await api.get(
        f"/api/metrics/latency/history/{params.event}", connection=params.connection
    )
    newest = list(reversed(points))

    def line(point: dict[str, Any]) -> str:
        return f"{iso(point.get('timestamp'))}: {number(point.get('latencyMs'))} ms"

    return listing(
        f"Latency history of {params.event}, newest first", newest, line, limit=params.limit
    )


async def latency_doctor(api: ApiCaller, params: Scoped) -> str:
    report = await api.get("/api/metrics/latency/doctor", connection=params.connection)
    return f"LATENCY DOCTOR:\n{block(report.get('report'), limit=REPORT_CHARS)}"


TOOLS = [
    ToolSpec(
        "latency_latest",
        "Latency spikes per event (LATENCY LATEST): latest and maximum in ms, with times.",
        latency_latest,
    ),
    ToolSpec(
        "latency_history",
        "The recorded spikes of one latency event, in ms with times.",
        latency_history,
        EventParams,
    ),
    ToolSpec(
        "latency_doctor",
        "The server's own LATENCY DOCTOR analysis and advice.",
        latency_doctor,
    ),
]
