"""FastAPI dependencies of the cluster domain."""

from typing import Annotated

from fastapi import Depends

from svc_monitor.cluster.service import ClusterService
from svc_monitor.services import FeaturesDep


def get_clusters(features: FeaturesDep) -> ClusterService:
    return features.clusters


ClustersDep = Annotated[ClusterService, Depends(get_clusters)]
