"""Slow-log and command-log routes: live reads and resets, patterns, history (under /api)."""

from typing import Annotated

from fastapi import APIRouter, Query

from svc_monitor.api.error_responses import error_responses
from svc_monitor.api.params import MAX_BYTES, From, Limit, Offset, To
from svc_monitor.connections.dependencies import LiveConnection
from svc_monitor.kit.plain_text import Printable
from svc_monitor.slowlog.dependencies import SlowlogDep
from svc_monitor.slowlog.models import EntryFilter
from svc_monitor.slowlog.schemas import (
    CommandLogEntryRead,
    LogEntryRead,
    LogLength,
    LogReset,
    LogTypeParam,
    PatternAnalysis,
    StoredCommandLogEntry,
    StoredLogEntry,
)

router = APIRouter(tags=["slowlog"])

LogType = Annotated[
    LogTypeParam,
    Query(description="which command log: slow (µs), large-request or large-reply (bytes)"),
]
Count = Annotated[int, Query(ge=1, le=10_000, description="at most this many entries")]
# Printable: a NUL would reach the stored entries' query, which PostgreSQL refuses outright
# (a 500 until it was refused here, with a 422 naming the parameter).
CommandFilter = Annotated[
    Printable | None,
    Query(max_length=64, description="only this command (case-insensitive), e.g. get"),
]
MinDuration = Annotated[
    int | None,
    Query(
        alias="minDuration",
        ge=0,
        le=MAX_BYTES,
        description="only entries at least this long (µs) or large (bytes)",
    ),
]

# 501: SLOWLOG renamed, disabled by a managed provider or denied to the connection's user
# (found by detection); the message says which and why.
_LIVE_ERRORS = error_responses(404, 409, 422, 501, 503)
_HISTORY_ERRORS = error_responses(404, 422, 501)
_COMMANDLOG_ERRORS = error_responses(404, 409, 422, 501, 503)


@router.get("/metrics/slowlog", response_model=list[LogEntryRead], responses=_LIVE_ERRORS)
async def get_slowlog(
    connection: LiveConnection, slowlog: SlowlogDep, count: Count = 10
) -> list[LogEntryRead]:
    """The newest `count` slow-log entries, read live from the server, newest first (501
    where the server has no usable SLOWLOG: renamed, disabled, or denied to this user)."""
    return await slowlog.slowlog(connection, count=count)


@router.get("/metrics/slowlog/length", response_model=LogLength, responses=_LIVE_ERRORS)
async def get_slowlog_length(connection: LiveConnection, slowlog: SlowlogDep) -> LogLength:
    """How many entries the server's slow log holds now."""
    return LogLength(length=await slowlog.slowlog_length(connection))


@router.delete("/metrics/slowlog", response_model=LogReset, responses=_LIVE_ERRORS)
async def reset_slowlog(connection: LiveConnection, slowlog: SlowlogDep) -> LogReset:
    """Empty the server's slow log (SLOWLOG RESET). Stored history is kept."""
    await slowlog.reset_slowlog(connection)
    return LogReset(success=True)


@router.get("/metrics/slowlog/patterns", response_model=PatternAnalysis, responses=_HISTORY_ERRORS)
async def get_slowlog_patterns(
    connection: LiveConnection, slowlog: SlowlogDep, count: Count = 128
) -> PatternAnalysis:
    """Patterns (a command and its keys with variable parts as `*`, e.g. `GET user:*`) over
    the newest `count` stored slow-log entries, busiest first."""
    return await slowlog.patterns(connection, count=count, log_type=None)


@router.get(
    "/metrics/commandlog", response_model=list[CommandLogEntryRead], responses=_COMMANDLOG_ERRORS
)
async def get_commandlog(
    connection: LiveConnection,
    slowlog: SlowlogDep,
    count: Count = 128,
    type: LogType = "slow",
) -> list[CommandLogEntryRead]:
    """The newest `count` entries of one command log, read live, newest first (Valkey 8.1+;
    501 elsewhere)."""
    return await slowlog.commandlog(connection, count=count, log_type=type)


@router.get("/metrics/commandlog/length", response_model=LogLength, responses=_COMMANDLOG_ERRORS)
async def get_commandlog_length(
    connection: LiveConnection, slowlog: SlowlogDep, type: LogType = "slow"
) -> LogLength:
    """How many entries one command log holds now (Valkey 8.1+; 501 elsewhere)."""
    return LogLength(length=await slowlog.commandlog_length(connection, log_type=type))


@router.delete("/metrics/commandlog", response_model=LogReset, responses=_COMMANDLOG_ERRORS)
async def reset_commandlog(
    connection: LiveConnection, slowlog: SlowlogDep, type: LogType = "slow"
) -> LogReset:
    """Empty one command log on the server (COMMANDLOG RESET). Stored history is kept."""
    await slowlog.reset_commandlog(connection, log_type=type)
    return LogReset(success=True)


@router.get(
    "/metrics/commandlog/patterns",
    response_model=PatternAnalysis,
    responses=error_responses(404, 409, 422, 501),
)
async def get_commandlog_patterns(
    connection: LiveConnection,
    slowlog: SlowlogDep,
    count: Count = 128,
    type: LogType = "slow",
) -> PatternAnalysis:
    """Patterns over the newest `count` stored entries of one command log; for large-request
    and large-reply the durations are sizes in bytes (Valkey 8.1+; 501 elsewhere)."""
    return await slowlog.patterns(connection, count=count, log_type=type)


@router.get(
    "/slowlog-analytics/entries",
    response_model=list[StoredLogEntry],
    responses=_HISTORY_ERRORS,
)
async def list_slowlog_entries(
    connection: LiveConnection,
    slowlog: SlowlogDep,
    since: From = None,
    until: To = None,
    command: CommandFilter = None,
    min_duration: MinDuration = None,
    limit: Limit = 100,
    offset: Offset = 0,
) -> list[StoredLogEntry]:
    """Stored slow-log entries, newest start first; `from`/`to` bound the start time."""
    where = EntryFilter(since, until, command, min_duration)
    return await slowlog.slowlog_history(connection, where, limit=limit, offset=offset)


@router.get(
    "/commandlog-analytics/entries",
    response_model=list[StoredCommandLogEntry],
    responses=error_responses(404, 409, 422, 501),
)
async def list_commandlog_entries(
    connection: LiveConnection,
    slowlog: SlowlogDep,
    type: LogType = "slow",
    since: From = None,
    until: To = None,
    command: CommandFilter = None,
    min_duration: MinDuration = None,
    limit: Limit = 100,
    offset: Offset = 0,
) -> list[StoredCommandLogEntry]:
    """Stored entries of one command log, newest start first; `from`/`to` bound the start
    time (Valkey 8.1+; 501 elsewhere)."""
    where = EntryFilter(since, until, command, min_duration)
    return await slowlog.commandlog_history(
        connection, where, log_type=type, limit=limit, offset=offset
    )
