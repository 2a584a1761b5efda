"""Anomaly detection routes (under /api), Pro, connection-scoped by X-Connection-Id."""

from typing import Annotated, Literal

from fastapi import APIRouter, Path, Query, status

from svc_monitor.anomaly.dependencies import AnomalyDep
from svc_monitor.anomaly.schemas import (
    AnomalyEventRead,
    BufferRead,
    BuffersRead,
    CorrelatedGroupRead,
)
from svc_monitor.api.dependencies import ServicesDep
from svc_monitor.api.error_responses import error_responses
from svc_monitor.api.params import MAX_COUNT, MAX_EPOCH_MS
from svc_monitor.connections.dependencies import SelectedConnection
from svc_monitor.detection.anomaly.detectors import READY_AT, WINDOW
from svc_monitor.licensing.dependencies import RequireFeature
from svc_monitor.licensing.models import Feature

router = APIRouter(
    tags=["anomaly detection"], dependencies=[RequireFeature(Feature.ANOMALY_DETECTION).depends]
)

Since = Annotated[int | None, Query(ge=0, le=MAX_EPOCH_MS, description="epoch ms, inclusive")]
Until = Annotated[int | None, Query(ge=0, le=MAX_EPOCH_MS, description="epoch ms, inclusive")]
RowLimit = Annotated[int, Query(ge=1, le=10_000)]
Id = Annotated[int, Path(ge=1, le=MAX_COUNT)]


@router.get(
    "/anomaly/events",
    response_model=list[AnomalyEventRead],
    responses=error_responses(403, 404, 422),
)
async def list_anomaly_events(
    connection: SelectedConnection,
    anomaly: AnomalyDep,
    since: Since = None,
    until: Until = None,
    metric: Annotated[str | None, Query(max_length=32)] = None,
    severity: Literal["warning", "critical"] | None = None,
    resolved: bool | None = None,
    limit: RowLimit = 100,
) -> list[AnomalyEventRead]:
    """Detected anomalies of the connection, newest first: one row per metric that left
    its baseline (z-score) or tripped a rule, with the group it was correlated into."""
    rows = await anomaly.events(
        connection.id,
        since=since,
        until=until,
        metric=metric,
        severity=severity,
        resolved=resolved,
        limit=limit,
    )
    return [AnomalyEventRead.of(r) for r in rows]


@router.get(
    "/anomaly/groups",
    response_model=list[CorrelatedGroupRead],
    responses=error_responses(403, 404, 422),
)
async def list_anomaly_groups(
    connection: SelectedConnection,
    anomaly: AnomalyDep,
    since: Since = None,
    until: Until = None,
    pattern: Annotated[str | None, Query(max_length=32)] = None,
    resolved: bool | None = None,
    limit: RowLimit = 100,
) -> list[CorrelatedGroupRead]:
    """Correlated groups, newest first: the anomalies of one connection within 5 s of
    each other, the pattern they match (memory_pressure, traffic_burst ...), a diagnosis
    and a suggested next step."""
    rows = await anomaly.groups(
        connection.id, since=since, until=until, pattern=pattern, resolved=resolved, limit=limit
    )
    return [CorrelatedGroupRead.of(r) for r in rows]


@router.get("/anomaly/buffers", response_model=BuffersRead, responses=error_responses(403, 404))
async def list_anomaly_buffers(
    connection: SelectedConnection, anomaly: AnomalyDep, services: ServicesDep
) -> BuffersRead:
    """Each metric's rolling baseline on this connection: samples held (at most
    `windowSize`), whether it is ready (`readyAt` samples), its mean and standard
    deviation. Where replicas share the polling, one that does not poll the connection
    answers with the baselines its holder last saved (at most 30 s old)."""
    if not connection.pushed and services.ownership.polled_elsewhere(connection.id):
        buffers = await anomaly.saved_buffers(connection.id)
    else:
        buffers = anomaly.buffers(connection.id)
    return BuffersRead(
        connectionId=connection.id,
        readyAt=READY_AT,
        windowSize=WINDOW,
        buffers=[BufferRead.of(b) for b in buffers],
    )


@router.post(
    "/anomaly/events/{event_id}/resolve",
    status_code=status.HTTP_204_NO_CONTENT,
    responses=error_responses(403, 404, 422),
)
async def resolve_anomaly_event(
    event_id: Id, connection: SelectedConnection, anomaly: AnomalyDep
) -> None:
    """Mark one anomaly event resolved (admins)."""
    await anomaly.resolve_event(connection.id, event_id)


@router.post(
    "/anomaly/groups/{group_id}/resolve",
    status_code=status.HTTP_204_NO_CONTENT,
    responses=error_responses(403, 404, 422),
)
async def resolve_anomaly_group(
    group_id: Id, connection: SelectedConnection, anomaly: AnomalyDep
) -> None:
    """Mark a correlated group and all its events resolved (admins)."""
    await anomaly.resolve_group(connection.id, group_id)
