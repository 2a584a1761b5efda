"""GET /health (also /api/health) and GET /api/version."""

from typing import Annotated

from fastapi import APIRouter, Header, Response

from svc_monitor.api.dependencies import ServicesDep
from svc_monitor.api.error_responses import error_responses
from svc_monitor.system.schemas import HealthRead, VersionRead

router = APIRouter(tags=["system"])

ConnectionHeader = Annotated[
    str | None,
    Header(description="The connection to report on; absent means the default", max_length=64),
]


@router.get("/health", response_model=HealthRead, responses=error_responses(404, 503))
async def get_health(
    services: ServicesDep, response: Response, x_connection_id: ConnectionHeader = None
) -> HealthRead:
    """Health of the API, its storage and the selected connection's engine.

    200 while the service is up, even when the engine is down (`database.status` is
    `disconnected` with the error); 503 when the service's own storage does not answer.
    """
    health = await services.health.health(x_connection_id)
    if health.storage.status != "ok":
        response.status_code = 503
    return health


@router.get("/version", response_model=VersionRead)
async def get_version(services: ServicesDep) -> VersionRead:
    """This version, the latest release and whether an update is available."""
    return services.versions.read()
