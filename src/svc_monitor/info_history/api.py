"""Metrics routes: live INFO, INFO history and memory snapshots (under /api)."""

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Response

from svc_monitor.api.dependencies import ServicesDep
from svc_monitor.api.error_responses import error_responses
from svc_monitor.api.params import From, HistoryPage, To
from svc_monitor.connections.dependencies import ConnectionServiceDep, SelectedConnection
from svc_monitor.errors import Unavailable
from svc_monitor.info_history.schemas import (
    HistorySeries,
    MemorySnapshot,
    MonitorLoad,
    ParsedInfoRead,
)
from svc_monitor.info_history.service import InfoHistoryService


def get_info_history(services: ServicesDep) -> InfoHistoryService:
    return services.info_history


InfoHistoryDep = Annotated[InfoHistoryService, Depends(get_info_history)]

router = APIRouter(tags=["metrics"])


@router.get("/metrics/info", response_model=ParsedInfoRead, responses=error_responses(404, 503))
async def get_info(
    connection: SelectedConnection,
    connections: ConnectionServiceDep,
    metrics: InfoHistoryDep,
    services: ServicesDep,
    sections: Annotated[
        str | None, Query(max_length=200, description="comma-separated INFO sections")
    ] = None,
) -> ParsedInfoRead:
    """INFO of the selected connection, read live and parsed into sections.

    For a push connection: the fields its Collector pushed that are still fresh (no
    command is sent); 503 until a push arrives or once every field is stale."""
    wanted = [s.strip() for s in (sections or "").split(",") if s.strip()]
    rejected = services.live_state.polls.rejected.get(connection.id, 0)
    if connection.pushed:
        latest = services.live_state.latest(connection.id)
        if latest is None:
            raise Unavailable(f"No fresh metrics pushed for '{connection.name}' yet")
        pushed = latest.info.sections
        return ParsedInfoRead(
            sections={k: v for k, v in pushed.items() if not wanted or k in wanted},
            rejectedValues=rejected,
        )
    client = connections.client(connection)
    latest = services.live_state.latest(connection.id)
    polled_at = {} if latest is None else {s: latest.read_at_ms(s) for s in latest.info.sections}
    return ParsedInfoRead(
        sections=await metrics.live_info(client, wanted),
        rejectedValues=rejected,
        polledAt=polled_at,
    )


@router.get("/metrics/history", response_model=HistorySeries, responses=error_responses(404, 422))
async def get_history(
    connection: SelectedConnection,
    metrics: InfoHistoryDep,
    since: From = None,
    until: To = None,
    max_points: Annotated[int, Query(alias="maxPoints", ge=1, le=5000)] = 300,
) -> Response:
    """Stats samples (ops/s, clients, memory, CPU, network, hit ratio, keys, replicas) for
    charts, averaged into at most `maxPoints` buckets. Default window: the last hour.

    Windows whose buckets span five minutes or more are read from five-minute rollups."""
    series = await metrics.history(connection.id, since=since, until=until, max_points=max_points)
    # Serialized directly: re-validating 1,000 points against the response model would
    # double the time a week's chart takes (the model still documents the body).
    return Response(series.model_dump_json(by_alias=True), media_type="application/json")


@router.get(
    "/memory-analytics/snapshots",
    response_model=list[MemorySnapshot],
    responses=error_responses(404, 422),
)
async def list_memory_snapshots(
    connection: SelectedConnection, metrics: InfoHistoryDep, page: HistoryPage
) -> list[MemorySnapshot]:
    """Memory snapshots of the selected connection, oldest first within the window."""
    return await metrics.memory_snapshots(
        connection.id, since=page.since, until=page.until, limit=page.limit, offset=page.offset
    )


@router.get("/metrics/monitor-load", response_model=MonitorLoad, responses=error_responses(404))
async def get_monitor_load(
    connection: SelectedConnection, connections: ConnectionServiceDep, metrics: InfoHistoryDep
) -> MonitorLoad:
    """The commands this monitor has sent the selected server, with calls per minute and
    time spent: the load monitoring puts on the server it watches."""
    return metrics.monitor_load(connection.id, connections.ledger(connection))
