"""The two tools that answer a question rather than fetch a view: what is wrong now
(`diagnose`, ranked, with evidence and the next step) and what changed (`compare`)."""

from pydantic import Field

from svc_monitor.mcp.api_caller import ApiCaller
from svc_monitor.mcp.compare import MAX_WINDOW_MINUTES, compare
from svc_monitor.mcp.diagnose import DEFAULT_LIMIT, MAX_LIMIT, diagnose
from svc_monitor.mcp.output import cap
from svc_monitor.mcp.tools.spec import Scoped, ToolSpec


class DiagnoseParams(Scoped):
    connection: str | None = Field(
        default=None,
        max_length=200,
        description='Connection name or id, or "all" for the whole fleet; the default '
        "connection when omitted",
    )
    limit: int = Field(default=DEFAULT_LIMIT, ge=1, le=MAX_LIMIT, description="Most problems")


class CompareParams(Scoped):
    window_minutes: int = Field(
        default=60,
        ge=1,
        le=MAX_WINDOW_MINUTES,
        description="How far back the earlier point is, in minutes",
    )


async def diagnose_tool(api: ApiCaller, params: DiagnoseParams) -> str:
    found = await diagnose(api, params.connection, limit=params.limit)
    return cap(found.to_text())


async def compare_tool(api: ApiCaller, params: CompareParams) -> str:
    changes = await compare(api, params.connection, window_minutes=params.window_minutes)
    return cap(changes.to_text())


TOOLS = [
    ToolSpec(
        "diagnose",
        'Current problems of one instance, or of the whole fleet with connection="all", '
        "ranked by severity: each with its evidence (values with units and times) and the "
        "next step. Draws on INFO, thresholds, replication, slow-log bursts, forecasts, "
        "anomalies and CVE findings. Start here.",
        diagnose_tool,
        DiagnoseParams,
    ),
    ToolSpec(
        "compare",
        "What changed on an instance between window_minutes ago and now: memory, "
        "operations per second, clients, hit ratio, keys, slow-log rate, restarts; only "
        "changes past a threshold, biggest first.",
        compare_tool,
        CompareParams,
    ),
]
