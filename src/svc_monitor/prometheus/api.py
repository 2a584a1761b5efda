"""`GET /api/prometheus/metrics`: the Prometheus text format, for a stock Prometheus.

Who may scrape is decided in auth/roles.py (Access.SCRAPE): open unless
PROMETHEUS_BEARER_TOKEN is set, then that token (what Prometheus's `authorization`
block sends) or a signed-in user.
"""

from fastapi import APIRouter
from fastapi.responses import Response

from svc_monitor.api.dependencies import FeaturesDep

router = APIRouter(tags=["prometheus"])
# The text format every Prometheus 2.x reads (prometheus_client's newest, 1.0.0, is for
# Prometheus 3); our names are plain ASCII, so the two texts are the same.
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


@router.get(
    "/prometheus/metrics",
    response_class=Response,
    responses={200: {"content": {CONTENT_TYPE: {}}}},
    summary="Metrics of every connection in the Prometheus text format",
)
async def prometheus_metrics(features: FeaturesDep) -> Response:
    """Every connection series carries `connection` = host:port (a cluster connection shows
    each node it polls under the node's own). Built from what the polls last saw; a
    connection not observed within PROMETHEUS_STALENESS_MS has no series but
    `svc_poll_stale`. METRICS_EXPORT_PROFILE=full adds the per-pattern, per-slot and
    per-client-name/user families and the poll diagnostics (docs: Prometheus metrics). Open
    unless PROMETHEUS_BEARER_TOKEN is set (then send `Authorization: Bearer <token>`)."""
    return Response(await features.prometheus.render(), media_type=CONTENT_TYPE)
