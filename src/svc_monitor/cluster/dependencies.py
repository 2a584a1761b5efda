"""FastAPI dependencies of the cluster domain."""

from typing import Annotated

from fastapi import Depends

from svc_monitor.api.dependencies import FeaturesDep
from svc_monitor.cluster.service import ClusterService


def get_clusters(features: FeaturesDep) -> ClusterService:
    return features.cluster


ClustersDep = Annotated[ClusterService, Depends(get_clusters)]
