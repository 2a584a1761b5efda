"""Live-read metrics routes (under /api): latency, memory, role, config, keyspace (the
cluster ones are in cluster/api.py).

Every route reads the engine of the selected connection (`X-Connection-Id`) at request time,
so each takes it as LiveConnection (a push connection: 409 before anything else). Engine
refusals answer 501 with the engine's words, an unreachable engine 503.
"""

from typing import Annotated

from fastapi import APIRouter, Path, Query

from svc_monitor.api.error_responses import error_responses
from svc_monitor.connections.dependencies import LiveConnection
from svc_monitor.live.dependencies import LiveDep
from svc_monitor.live.schemas import (
    CommandHistogramRead,
    ConfigParameterRead,
    ConfigValues,
    DbSizeRead,
    LastSaveRead,
    LatencyEventRead,
    LatencyHistoryPoint,
    LatencyReset,
    MemoryStatsRead,
    Report,
    RoleRead,
)

router = APIRouter(tags=["live metrics"])

_LIVE = error_responses(404, 501, 503)


@router.get("/metrics/latency/latest", response_model=list[LatencyEventRead], responses=_LIVE)
async def get_latency_latest(connection: LiveConnection, live: LiveDep) -> list[LatencyEventRead]:
    """LATENCY LATEST: the latest and worst spike of every monitored event
    (needs `latency-monitor-threshold` above 0 on the server)."""
    return await live.latency_latest(connection)


@router.get(
    "/metrics/latency/history/{eventName}",
    response_model=list[LatencyHistoryPoint],
    responses=_LIVE,
)
async def get_latency_history(
    connection: LiveConnection,
    live: LiveDep,
    event_name: Annotated[str, Path(alias="eventName", min_length=1, max_length=64)],
) -> list[LatencyHistoryPoint]:
    """LATENCY HISTORY of one event (up to 160 spikes, oldest first); empty when unknown."""
    return await live.latency_history(connection, event_name)


@router.get(
    "/metrics/latency/histogram",
    response_model=dict[str, CommandHistogramRead],
    responses=_LIVE,
)
async def get_latency_histogram(
    connection: LiveConnection,
    live: LiveDep,
    commands: Annotated[
        str | None,
        Query(max_length=2000, description="comma-separated command names; absent means all"),
    ] = None,
) -> dict[str, CommandHistogramRead]:
    """LATENCY HISTOGRAM (Redis 7+, Valkey): calls per latency bucket of each command.
    Older engines answer 501."""
    wanted = [c.strip() for c in (commands or "").split(",") if c.strip()]
    return await live.latency_histogram(connection, wanted)


@router.get("/metrics/latency/doctor", response_model=Report, responses=_LIVE)
async def get_latency_doctor(connection: LiveConnection, live: LiveDep) -> Report:
    """LATENCY DOCTOR: the engine's own analysis of its latency spikes."""
    return Report(report=await live.latency_doctor(connection))


@router.delete("/metrics/latency", response_model=LatencyReset, responses=_LIVE)
async def reset_latency(
    connection: LiveConnection,
    live: LiveDep,
    event_name: Annotated[
        str | None,
        Query(alias="eventName", min_length=1, max_length=64, description="absent: all events"),
    ] = None,
) -> LatencyReset:
    """LATENCY RESET: forget the spikes of one event, or of all events."""
    await live.reset_latency(connection, event_name)
    return LatencyReset()


@router.get("/metrics/memory/stats", response_model=MemoryStatsRead, responses=_LIVE)
async def get_memory_stats(connection: LiveConnection, live: LiveDep) -> MemoryStatsRead:
    """MEMORY STATS as an object (`peak.allocated`, `dataset.bytes`, `db.0` ...)."""
    return await live.memory_stats(connection)


@router.get("/metrics/memory/doctor", response_model=Report, responses=_LIVE)
async def get_memory_doctor(connection: LiveConnection, live: LiveDep) -> Report:
    """MEMORY DOCTOR report; 501 where the engine lacks it (Redis before 4.0, or the
    command renamed or denied)."""
    return Report(report=await live.memory_doctor(connection))


@router.get("/metrics/role", response_model=RoleRead, responses=_LIVE)
async def get_role(connection: LiveConnection, live: LiveDep) -> RoleRead:
    """ROLE: master (offset, replicas), slave (master, link state, offset) or sentinel."""
    return await live.role(connection)


# TODO(auth): /metrics/config and /metrics/config/{parameter} become admin/owner only once
# users exist (configuration can hold credentials: docs/features/users-and-access.md#roles).
# Add the role dependency here.
@router.get("/metrics/config", response_model=ConfigValues, responses=_LIVE)
async def get_config(
    connection: LiveConnection,
    live: LiveDep,
    pattern: Annotated[
        str, Query(min_length=1, max_length=200, description="CONFIG GET glob pattern")
    ] = "*",
) -> ConfigValues:
    """CONFIG GET of a glob pattern. Admin/owner only once user control exists (values can
    hold credentials such as `masterauth`); values are never logged."""
    return await live.config(connection, pattern)


@router.get(
    "/metrics/config/{parameter}",
    response_model=ConfigParameterRead,
    responses=error_responses(404, 501, 503),
)
async def get_config_parameter(
    connection: LiveConnection,
    live: LiveDep,
    parameter: Annotated[str, Path(min_length=1, max_length=200)],
) -> ConfigParameterRead:
    """One configuration parameter; 404 when the server has no such parameter. Admin/owner
    only once user control exists; values are never logged."""
    return await live.config_parameter(connection, parameter)


@router.get("/metrics/dbsize", response_model=DbSizeRead, responses=_LIVE)
async def get_dbsize(connection: LiveConnection, live: LiveDep) -> DbSizeRead:
    """DBSIZE: keys in the connection's database."""
    return DbSizeRead(size=await live.dbsize(connection))


@router.get("/metrics/lastsave", response_model=LastSaveRead, responses=_LIVE)
async def get_lastsave(connection: LiveConnection, live: LiveDep) -> LastSaveRead:
    """LASTSAVE: time of the last successful RDB save, in epoch ms."""
    return LastSaveRead(timestamp=await live.lastsave_ms(connection))
