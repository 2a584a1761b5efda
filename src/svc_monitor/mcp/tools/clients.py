"""Connected clients: a summary, the top talkers and the idle ones."""

from collections import Counter
from typing import Any

from pydantic import Field

from svc_monitor.mcp.api_caller import ApiCaller
from svc_monitor.mcp.output import listing, number
from svc_monitor.mcp.tools.spec import Limited, Scoped, ToolSpec
from svc_monitor.mcp.untrusted import data


class IdleParams(Limited):
    idle_seconds: int = Field(
        default=300, ge=1, le=30 * 86400, description="Idle for at least this many seconds"
    )


async def clients_summary(api: ApiCaller, params: Scoped) -> str:
    clients = await api.get("/api/metrics/clients", connection=params.connection)
    by_name = Counter(data(c.get("name"), limit=80, missing="(no name)") for c in clients)
    by_user = Counter(data(c.get("user"), limit=80, missing="?") for c in clients)
    by_cmd = Counter(data(c.get("cmd"), limit=80, missing="?") for c in clients)
    idle = sorted((c.get("idleSeconds") or 0 for c in clients), reverse=True)
    omem = sum(c.get("omem") or 0 for c in clients)
    lines = [
        f"{len(clients)} clients connected; longest idle {idle[0] if idle else 0} s;"
        f" output buffers {omem} bytes in all",
        f"by name: {_top(by_name)}",
        f"by user: {_top(by_user)}",
        f"last command: {_top(by_cmd)}",
    ]
    return "\n".join(lines)


def _top(counts: Counter[str]) -> str:
    """The ten largest groups; the rest summed, so the line stays short on a busy server."""
    top = counts.most_common(10)
    rest = sum(counts.values()) - sum(v for _, v in top)
    text = ", ".join(f"{k} {v}" for k, v in top) or "none"
    return f"{text}, {rest} more in other groups" if rest else text


async def top_talkers(api: ApiCaller, params: Limited) -> str:
    found = await api.get(
        "/api/client-analytics/command-distribution",
        connection=params.connection,
        params={"groupBy": "name"},
    )
    rows = sorted(found.get("distribution", []), key=lambda r: -(r.get("totalCommands") or 0))

    def line(row: dict[str, Any]) -> str:
        return (
            f"{data(row.get('identifier') or None, missing='(no name)')}:"
            f" {row.get('totalCommands')} commands seen ({row.get('sharePercent')}%),"
            f" mostly {data(row.get('topCommand'))}"
        )

    title = f"Clients by commands seen in {found.get('totalSnapshots')} snapshots (last hour)"
    return listing(title, rows, line, limit=params.limit)


async def idle_clients(api: ApiCaller, params: IdleParams) -> str:
    found = await api.get(
        "/api/client-analytics/idle-connections",
        connection=params.connection,
        params={"idleThresholdSeconds": str(params.idle_seconds), "limit": str(params.limit)},
    )

    def line(row: dict[str, Any]) -> str:
        return ", ".join(f"{k}={number(v)}" for k, v in row.items() if v not in (None, ""))

    title = f"Clients idle for {found.get('thresholdSeconds')} s or more"
    return listing(title, found.get("connections", []), line, limit=params.limit)


TOOLS = [
    ToolSpec(
        "clients_summary",
        "The connected clients now: how many, grouped by name, user and last command, the "
        "longest idle time and output buffer memory.",
        clients_summary,
    ),
    ToolSpec(
        "top_talkers",
        "Which clients (by name) sent the most commands over the last hour, and which command.",
        top_talkers,
        Limited,
    ),
    ToolSpec(
        "idle_clients",
        "Clients seen idle past a threshold across stored snapshots (connection leaks).",
        idle_clients,
        IdleParams,
    ),
]
