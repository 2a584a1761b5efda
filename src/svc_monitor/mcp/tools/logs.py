"""The slow log and COMMANDLOG: entries and their patterns."""

from typing import Any, Literal

from pydantic import Field

from svc_monitor.mcp.api_caller import ApiCaller
from svc_monitor.mcp.output import iso, listing, number
from svc_monitor.mcp.tools.spec import Limited, ToolSpec
from svc_monitor.mcp.untrusted import command_line, data

LogType = Literal["slow", "large-request", "large-reply"]


class CommandLogParams(Limited):
    type: LogType = Field(
        default="slow",
        description="slow (execution time), large-request or large-reply (bytes)",
    )


def _entry(entry: dict[str, Any]) -> str:
    who = entry.get("clientName") or entry.get("clientAddress")
    return (
        f"{iso(entry.get('startedAt'))} {number(entry.get('duration'))} us"
        f" {data(entry.get('command'))} ({command_line(entry.get('args'))})"
        f" from {data(who, missing='?')}"
    )


def _pattern(pattern: dict[str, Any]) -> str:
    return (
        f"{data(pattern.get('pattern'))}: {pattern.get('count')} entries"
        f" ({pattern.get('percentage')}%), avg {pattern.get('avgDuration')} us,"
        f" max {pattern.get('maxDuration')} us"
    )


async def slowlog(api: ApiCaller, params: Limited) -> str:
    entries = await api.get(
        "/api/metrics/slowlog", connection=params.connection, params={"count": str(params.limit)}
    )
    return listing("Slow log, newest first (duration in microseconds)", entries, _entry)


async def slowlog_patterns(api: ApiCaller, params: Limited) -> str:
    found = await api.get("/api/metrics/slowlog/patterns", connection=params.connection)
    title = f"Slow log patterns over {found.get('totalEntries')} entries"
    return listing(title, found.get("patterns", []), _pattern, limit=params.limit)


async def commandlog(api: ApiCaller, params: CommandLogParams) -> str:
    entries = await api.get(
        "/api/metrics/commandlog",
        connection=params.connection,
        params={"count": str(params.limit), "type": params.type},
    )
    unit = "microseconds" if params.type == "slow" else "bytes"
    return listing(f"COMMANDLOG {params.type}, newest first ({unit})", entries, _entry)


async def commandlog_patterns(api: ApiCaller, params: CommandLogParams) -> str:
    found = await api.get(
        "/api/metrics/commandlog/patterns",
        connection=params.connection,
        params={"type": params.type},
    )
    title = f"COMMANDLOG {params.type} patterns over {found.get('totalEntries')} entries"
    return listing(title, found.get("patterns", []), _pattern, limit=params.limit)


async def slowlog_history(api: ApiCaller, params: Limited) -> str:
    entries = await api.get(
        "/api/slowlog-analytics/entries",
        connection=params.connection,
        params={"limit": str(params.limit)},
    )
    return listing("Stored slow log entries, newest first (microseconds)", entries, _entry)


TOOLS = [
    ToolSpec(
        "slowlog",
        "The newest slow log entries read from the server now: time, duration in "
        "microseconds, command and arguments, client.",
        slowlog,
        Limited,
    ),
    ToolSpec(
        "slowlog_patterns",
        "Slow log entries grouped by command shape: count, share, average and maximum "
        "duration; the first place to look when an instance is slow.",
        slowlog_patterns,
        Limited,
    ),
    ToolSpec(
        "slowlog_history",
        "Slow log entries svc-monitor stored over time (beyond the server's own buffer).",
        slowlog_history,
        Limited,
    ),
    ToolSpec(
        "commandlog",
        "Valkey 8.1+ COMMANDLOG entries of one type: slow, large-request or large-reply.",
        commandlog,
        CommandLogParams,
    ),
    ToolSpec(
        "commandlog_patterns",
        "COMMANDLOG entries of one type grouped by command shape.",
        commandlog_patterns,
        CommandLogParams,
    ),
]
