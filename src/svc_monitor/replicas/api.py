"""GET /api/replicas: the svc-monitor processes sharing this storage."""

from fastapi import APIRouter

from svc_monitor.api.dependencies import ServicesDep
from svc_monitor.api.error_responses import error_responses
from svc_monitor.replicas.schemas import ReplicaRead, ReplicasRead

router = APIRouter(tags=["replicas"])


@router.get("/replicas", response_model=ReplicasRead, responses=error_responses(401, 503))
async def list_replicas(services: ServicesDep) -> ReplicasRead:
    """Every replica with a row in storage, oldest first: live while its heartbeat is
    within the timeout; a replica that stopped cleanly has no row, a dead one is listed as
    not live until it is pruned (six timeouts after its last heartbeat)."""
    registry = services.replicas
    replicas = await registry.list()
    return ReplicasRead(
        heartbeatMs=int(registry.heartbeat_s * 1000),
        timeoutMs=registry.timeout_ms,
        replicas=[ReplicaRead.of(r) for r in replicas],
    )
