"""GET /health (also /api/health) and GET /api/version."""

from typing import Annotated

from fastapi import APIRouter, Header, Request, Response

from svc_monitor.api.dependencies import ServicesDep
from svc_monitor.api.error_responses import error_responses
from svc_monitor.system.schemas import HealthRead, LivenessRead, VersionRead

router = APIRouter(tags=["system"])

ConnectionHeader = Annotated[
    str | None,
    Header(description="The connection to report on; absent means the default", max_length=64),
]


@router.get("/health", response_model=HealthRead, responses=error_responses(404, 503))
async def get_health(
    request: Request,
    services: ServicesDep,
    response: Response,
    x_connection_id: ConnectionHeader = None,
) -> HealthRead:
    """Readiness: health of the API, its storage and the selected connection's engine,
    within 250 ms whatever the monitored servers do.

    200 while the service can serve, even when the engine is down (`database.status` is
    `disconnected` with the error) or storage writes fail (`storage.status` is
    `degraded`); 503 with `status: starting` until every route answers, and 503 when the
    service's own storage does not answer (`database` is still the server's own state,
    checked on the connection last looked up; `unknown` if none was). Point a load
    balancer or a readiness probe here; a liveness probe at /health/live.
    """
    starting = request.app.state.features is None
    health = await services.health.health(x_connection_id, starting=starting)
    if health.storage.status == "error" or starting:
        response.status_code = 503
    return health


@router.get("/health/live", response_model=LivenessRead)
async def get_liveness() -> LivenessRead:
    """Liveness: 200 whenever the process answers at all. It asks nothing of storage or
    of the monitored servers, so a container probe never restarts svc-monitor because
    something it depends on or watches is down."""
    return LivenessRead(status="ok")


@router.get("/version", response_model=VersionRead)
async def get_version(services: ServicesDep) -> VersionRead:
    """This version, the latest release and whether an update is available."""
    return services.versions.read()
