"""Latency history routes (under /api)."""

from fastapi import APIRouter

from svc_monitor.api.error_responses import error_responses
from svc_monitor.api.params import HistoryPage
from svc_monitor.connections.dependencies import SelectedConnection
from svc_monitor.latency_analytics.dependencies import LatencyAnalyticsDep
from svc_monitor.latency_analytics.schemas import LatencyHistogramRead, LatencySnapshotRead

router = APIRouter(tags=["latency history"])


@router.get(
    "/latency-analytics/snapshots",
    response_model=list[LatencySnapshotRead],
    responses=error_responses(404, 422),
)
async def list_latency_snapshots(
    connection: SelectedConnection, latency: LatencyAnalyticsDep, page: HistoryPage
) -> list[LatencySnapshotRead]:
    """Stored latency events of the selected connection, oldest first: one row each time
    an event's latest spike moved (needs `latency-monitor-threshold` above 0)."""
    return await latency.snapshots(
        connection.id, since=page.since, until=page.until, limit=page.limit, offset=page.offset
    )


@router.get(
    "/latency-analytics/histograms",
    response_model=list[LatencyHistogramRead],
    responses=error_responses(404, 422),
)
async def list_latency_histograms(
    connection: SelectedConnection, latency: LatencyAnalyticsDep, page: HistoryPage
) -> list[LatencyHistogramRead]:
    """Stored LATENCY HISTOGRAM snapshots (one per poll, Redis 7+ and Valkey), oldest first."""
    return await latency.histograms(
        connection.id, since=page.since, until=page.until, limit=page.limit, offset=page.offset
    )
