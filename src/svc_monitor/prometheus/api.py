"""`GET /api/prometheus/metrics`: the Prometheus text format, for a stock Prometheus.

Who may scrape is decided in auth/roles.py (Access.SCRAPE): open unless
PROMETHEUS_BEARER_TOKEN is set, then that token (what Prometheus's `authorization`
block sends) or a signed-in user.
"""

from fastapi import APIRouter
from fastapi.responses import Response

from svc_monitor.events import now_ms
from svc_monitor.services import ServicesDep

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
async def prometheus_metrics(services: ServicesDep) -> Response:
    """Every series carries `connection` = host:port. Built from what the pollers last saw;
    a connection not observed within PROMETHEUS_STALENESS_MS has no series. Open unless
    PROMETHEUS_BEARER_TOKEN is set (then send `Authorization: Bearer <token>`)."""
    # Imported on the first scrape: an install nobody scrapes keeps its ~0.6 MB.
    from prometheus_client import CollectorRegistry, generate_latest

    from svc_monitor.prometheus.collector import LiveStateCollector, ScrapedConnection

    connections = [
        ScrapedConnection(c.id, f"{c.host}:{c.port}") for c in await services.connections.list()
    ]
    registry = CollectorRegistry(auto_describe=False)
    registry.register(
        LiveStateCollector(
            services.live_state,
            connections,
            now_ms=now_ms(),
            staleness_ms=services.settings.PROMETHEUS_STALENESS_MS,
        )
    )
    return Response(generate_latest(registry), media_type=CONTENT_TYPE)
