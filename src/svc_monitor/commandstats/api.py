"""Commandstats routes (under /api): latest counters and per-command history."""

from typing import Annotated

from fastapi import APIRouter, Query

from svc_monitor.api.dependencies import ServicesDep
from svc_monitor.api.error_responses import error_responses
from svc_monitor.api.params import From, Limit, To
from svc_monitor.commandstats.dependencies import CommandstatsDep
from svc_monitor.commandstats.schemas import CommandStatRead, CommandStatSample
from svc_monitor.connections.dependencies import ConnectionServiceDep, SelectedConnection

router = APIRouter(tags=["commandstats"])


@router.get(
    "/metrics/commandstats/summary",
    response_model=list[CommandStatRead],
    response_model_exclude_unset=True,
    responses=error_responses(404),
)
async def get_commandstats_summary(
    connection: SelectedConnection,
    commandstats: CommandstatsDep,
    connections: ConnectionServiceDep,
    services: ServicesDep,
) -> list[CommandStatRead]:
    """Per-command counters (calls, usec, rejected, failed) from the latest commandstats
    poll, most called first; empty until the first poll of the connection. Where replicas
    share the polling, one that does not poll the connection reads them live instead."""
    if not connection.pushed and services.ownership.polled_elsewhere(connection.id):
        return await commandstats.live_summary(connections.client(connection))
    return commandstats.summary(connection.id, pushed=connection.pushed)


@router.get(
    "/metrics/commandstats/history",
    response_model=list[CommandStatSample],
    responses=error_responses(404, 422),
)
async def get_commandstats_history(
    connection: SelectedConnection,
    commandstats: CommandstatsDep,
    command: Annotated[
        str,
        Query(
            min_length=1,
            max_length=128,
            description="command name as commandstats names it (`get`, `config|get`)",
        ),
    ],
    since: From = None,
    until: To = None,
    limit: Limit = 1000,
) -> list[CommandStatSample]:
    """Stored samples of one command, oldest first: a row for every poll in which its
    calls moved, with the counters and their deltas since the previous poll."""
    return await commandstats.history(connection.id, command, since=since, until=until, limit=limit)
