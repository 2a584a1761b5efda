"""Client analytics routes (stored CLIENT LIST snapshots) and live client routes (under /api)."""

from typing import Annotated

from fastapi import APIRouter, Path, Query

from svc_monitor.api.error_responses import error_responses
from svc_monitor.api.params import MAX_BYTES, MAX_COUNT, From, HistoryPage, Limit, To
from svc_monitor.client_analytics.dependencies import (
    ClientAnalyticsDep,
    ClientFilter,
    Name,
    User,
)
from svc_monitor.client_analytics.models import SnapshotFilter
from svc_monitor.client_analytics.schemas import (
    ActivityTimeline,
    BufferAnomalies,
    ClientSnapshot,
    ClientStats,
    ClientType,
    CommandDistribution,
    ConnectionSeries,
    GroupBy,
    IdleConnections,
    Killed,
    LiveClient,
    Pruned,
    SpikeDetection,
)
from svc_monitor.connections.dependencies import (
    ConnectionServiceDep,
    LiveConnection,
    SelectedConnection,
)

router = APIRouter(tags=["client-analytics"])

BucketMs = Annotated[int, Query(alias="bucketMs", ge=1000, le=86_400_000, description="ms")]
Kind = Annotated[ClientType | None, Query(description="only clients of this type")]
IncludeMonitor = Annotated[
    bool, Query(alias="includeMonitor", description="also list svc-monitor's own connections")
]
_HISTORY_ERRORS = error_responses(404, 422)
_LIVE_ERRORS = error_responses(404, 409, 422, 503)


@router.get(
    "/client-analytics/snapshots", response_model=list[ClientSnapshot], responses=_HISTORY_ERRORS
)
async def list_client_snapshots(
    where: ClientFilter, page: HistoryPage, analytics: ClientAnalyticsDep
) -> list[ClientSnapshot]:
    """Stored client snapshots (one per client per CLIENT LIST poll), newest first."""
    return await analytics.snapshots(where, limit=page.limit, offset=page.offset)


@router.get(
    "/client-analytics/timeseries", response_model=ConnectionSeries, responses=_HISTORY_ERRORS
)
async def get_client_timeseries(
    connection: SelectedConnection,
    analytics: ClientAnalyticsDep,
    since: From = None,
    until: To = None,
    bucket_ms: BucketMs = 60_000,
) -> ConnectionSeries:
    """Connection counts per bucket (most and average per poll, most per name and user).
    Default window: the last hour."""
    return await analytics.timeseries(connection.id, since=since, until=until, bucket_ms=bucket_ms)


@router.get("/client-analytics/stats", response_model=ClientStats, responses=_HISTORY_ERRORS)
async def get_client_stats(
    connection: SelectedConnection,
    analytics: ClientAnalyticsDep,
    since: From = None,
    until: To = None,
) -> ClientStats:
    """Current and peak connections, distinct names, users and IPs, and counts per name and
    user. Default window: all stored snapshots."""
    return await analytics.stats(SnapshotFilter(connection.id, since, until))


@router.get(
    "/client-analytics/history", response_model=list[ClientSnapshot], responses=_HISTORY_ERRORS
)
async def get_client_history(
    where: ClientFilter, page: HistoryPage, analytics: ClientAnalyticsDep
) -> list[ClientSnapshot]:
    """The snapshots of one client, picked by name, user or addr (at least one is required),
    newest first."""
    return await analytics.history(where, limit=page.limit, offset=page.offset)


@router.get(
    "/client-analytics/command-distribution",
    response_model=CommandDistribution,
    responses=_HISTORY_ERRORS,
)
async def get_command_distribution(
    connection: SelectedConnection,
    analytics: ClientAnalyticsDep,
    since: From = None,
    until: To = None,
    group_by: Annotated[GroupBy, Query(alias="groupBy")] = "name",
) -> CommandDistribution:
    """The last command of each snapshot, counted per client name, user or addr.
    Default window: the last hour."""
    return await analytics.command_distribution(
        connection.id, since=since, until=until, group_by=group_by
    )


@router.get(
    "/client-analytics/idle-connections", response_model=IdleConnections, responses=_HISTORY_ERRORS
)
async def list_idle_connections(
    connection: SelectedConnection,
    analytics: ClientAnalyticsDep,
    since: From = None,
    until: To = None,
    threshold: Annotated[int, Query(alias="idleThresholdSeconds", ge=0, le=MAX_COUNT)] = 300,
    min_occurrences: Annotated[int, Query(alias="minOccurrences", ge=1, le=MAX_COUNT)] = 10,
    limit: Limit = 100,
) -> IdleConnections:
    """Connections seen idle for at least `idleThresholdSeconds` in at least
    `minOccurrences` polls, longest idle first, with advice."""
    return await analytics.idle_connections(
        SnapshotFilter(connection.id, since, until),
        threshold_s=threshold,
        min_occurrences=min_occurrences,
        limit=limit,
    )


@router.get(
    "/client-analytics/buffer-anomalies", response_model=BufferAnomalies, responses=_HISTORY_ERRORS
)
async def list_buffer_anomalies(
    connection: SelectedConnection,
    analytics: ClientAnalyticsDep,
    since: From = None,
    until: To = None,
    qbuf: Annotated[
        int, Query(alias="qbufThreshold", ge=0, le=MAX_BYTES, description="bytes")
    ] = 1_000_000,
    omem: Annotated[
        int, Query(alias="omemThreshold", ge=0, le=MAX_BYTES, description="bytes")
    ] = 10_000_000,
    limit: Limit = 100,
) -> BufferAnomalies:
    """Snapshots whose query buffer or output memory passed a threshold, newest first, and
    buffer statistics of the window."""
    return await analytics.buffer_anomalies(
        SnapshotFilter(connection.id, since, until), qbuf=qbuf, omem=omem, limit=limit
    )


@router.get(
    "/client-analytics/activity-timeline",
    response_model=ActivityTimeline,
    responses=_HISTORY_ERRORS,
)
async def get_activity_timeline(
    connection: SelectedConnection,
    analytics: ClientAnalyticsDep,
    since: From = None,
    until: To = None,
    bucket_ms: BucketMs = 300_000,
    name: Name = None,
    user: User = None,
) -> ActivityTimeline:
    """Client activity per bucket: distinct clients, connections, commands, idle time and
    buffers; optionally of one client name or user. Default window: the last hour."""
    where = SnapshotFilter(connection.id, since, until, name, user)
    return await analytics.activity_timeline(where, bucket_ms=bucket_ms)


@router.get(
    "/client-analytics/spike-detection", response_model=SpikeDetection, responses=_HISTORY_ERRORS
)
async def detect_connection_spikes(
    connection: SelectedConnection,
    analytics: ClientAnalyticsDep,
    since: From = None,
    until: To = None,
    bucket_ms: BucketMs = 300_000,
    sensitivity: Annotated[float, Query(gt=0, le=100, description="k in mean + k*stdDev")] = 2.0,
) -> SpikeDetection:
    """Buckets with connection counts past max(mean + k*stdDev, 1.5 * mean), with the client
    names that held the most connections then. Default window: the last 24 hours."""
    return await analytics.spikes(
        connection.id, since=since, until=until, bucket_ms=bucket_ms, sensitivity=sensitivity
    )


@router.delete("/client-analytics/cleanup", response_model=Pruned, responses=_HISTORY_ERRORS)
async def cleanup_client_snapshots(
    connection: SelectedConnection,
    analytics: ClientAnalyticsDep,
    older_than: Annotated[
        int | None,
        Query(alias="olderThan", ge=0, description="epoch ms; default: 30 days ago"),
    ] = None,
) -> Pruned:
    """Delete the selected connection's snapshots captured before `olderThan`."""
    return Pruned(pruned=await analytics.cleanup(connection.id, older_than=older_than))


@router.get("/metrics/clients", response_model=list[LiveClient], responses=_LIVE_ERRORS)
async def list_clients(
    connection: LiveConnection,
    connections: ConnectionServiceDep,
    analytics: ClientAnalyticsDep,
    type: Kind = None,
    include_monitor: IncludeMonitor = False,
) -> list[LiveClient]:
    """Connected clients, read live (CLIENT LIST). svc-monitor's own connections are left
    out unless `includeMonitor=true`."""
    return await analytics.live_clients(
        connections.client(connection), include_monitor=include_monitor, type=type
    )


@router.get("/metrics/clients/{id}", response_model=LiveClient, responses=_LIVE_ERRORS)
async def get_client(
    connection: LiveConnection,
    connections: ConnectionServiceDep,
    analytics: ClientAnalyticsDep,
    client_id: Annotated[
        int, Path(alias="id", ge=0, le=MAX_BYTES, description="the server's client id")
    ],
) -> LiveClient:
    """One connected client by its id, read live."""
    return await analytics.live_client(connections.client(connection), client_id)


@router.delete("/metrics/clients", response_model=Killed, responses=_LIVE_ERRORS)
async def kill_clients(
    connection: LiveConnection,
    connections: ConnectionServiceDep,
    analytics: ClientAnalyticsDep,
    ids: Annotated[
        list[int] | None, Query(alias="id", description="client ids; repeat for several")
    ] = None,
    type: Kind = None,
) -> Killed:
    """Close client connections by id or every one of a type (one is required).
    svc-monitor's own connections are never closed."""
    return Killed(
        killed=await analytics.kill(connections.client(connection), ids=ids or [], type=type)
    )
