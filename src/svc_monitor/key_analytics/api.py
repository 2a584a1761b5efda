"""Key analytics routes (under /api), Pro, connection-scoped by X-Connection-Id."""

from typing import Annotated

from fastapi import APIRouter, Query

from svc_monitor.api.error_responses import error_responses
from svc_monitor.api.params import From, To
from svc_monitor.connections.dependencies import LiveConnection
from svc_monitor.key_analytics.dependencies import KeyAnalyticsDep
from svc_monitor.key_analytics.schemas import KeyAnalyticsSummaryRead, KeyPatternRead
from svc_monitor.licensing.dependencies import RequireFeature
from svc_monitor.licensing.models import Feature

router = APIRouter(
    tags=["key analytics"], dependencies=[RequireFeature(Feature.KEY_ANALYTICS).depends]
)


@router.get(
    "/key-analytics/patterns",
    response_model=list[KeyPatternRead],
    responses=error_responses(403, 404, 409, 422),
)
async def list_key_patterns(
    connection: LiveConnection,
    analytics: KeyAnalyticsDep,
    since: From = None,
    until: To = None,
    pattern: Annotated[str | None, Query(max_length=512)] = None,
    limit: Annotated[int, Query(ge=1, le=10_000)] = 100,
) -> list[KeyPatternRead]:
    """Key patterns (`user:*`) of the newest run, most memory first; with `from`/`to`,
    those of every run in the window, newest first. Counts and memory are scaled from
    the sample to the keyspace (DBSIZE). A push connection answers 409: it needs a live
    connection."""
    rows = await analytics.patterns(
        connection, since=since, until=until, pattern=pattern, limit=limit
    )
    return [KeyPatternRead.of(at, p) for at, p in rows]


@router.get(
    "/key-analytics/summary",
    response_model=KeyAnalyticsSummaryRead,
    responses=error_responses(403, 404, 409, 422),
)
async def get_key_analytics_summary(
    connection: LiveConnection, analytics: KeyAnalyticsDep
) -> KeyAnalyticsSummaryRead:
    """The newest run: when, from which server (a replica when one was reachable), how
    many keys it sampled of how many, its totals, size distribution per type, largest
    keys and hot keys (or why there are none)."""
    return KeyAnalyticsSummaryRead.of(connection.id, await analytics.latest_snapshot(connection))
