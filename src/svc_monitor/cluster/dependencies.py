"""FastAPI dependencies of the cluster domain."""

from typing import Annotated

from fastapi import Depends

from svc_monitor.cluster.service import ClusterService
from svc_monitor.services import ServicesDep


def get_clusters(services: ServicesDep) -> ClusterService:
    return services.clusters


ClustersDep = Annotated[ClusterService, Depends(get_clusters)]
