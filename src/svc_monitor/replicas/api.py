"""GET /api/replicas: the svc-monitor processes sharing this storage."""

from fastapi import APIRouter
from sqlalchemy.exc import SQLAlchemyError

from svc_monitor.api.dependencies import ServicesDep
from svc_monitor.api.error_responses import error_responses
from svc_monitor.errors import Unavailable
from svc_monitor.replicas.schemas import ReplicaRead, ReplicasRead

router = APIRouter(tags=["replicas"])


@router.get("/replicas", response_model=ReplicasRead, responses=error_responses(401, 503))
async def list_replicas(services: ServicesDep) -> ReplicasRead:
    """Every replica with a row in storage, oldest first, with the connections it polls:
    live while its heartbeat is within the timeout; a replica that stopped cleanly has no
    row, a dead one is listed as not live until it is pruned (six timeouts after its last
    heartbeat)."""
    registry = services.replicas
    replicas = await registry.list()
    try:
        owned = await services.ownership.holders()
    except SQLAlchemyError:
        raise Unavailable("Storage did not answer: the connection leases are unknown") from None
    return ReplicasRead(
        heartbeatMs=int(registry.heartbeat_s * 1000),
        timeoutMs=registry.timeout_ms,
        replicas=[ReplicaRead.of(r, owned.get(r.record.id, [])) for r in replicas],
    )
