"""FastAPI dependencies of the anomaly domain."""

from typing import Annotated

from fastapi import Depends

from svc_monitor.anomaly.service import AnomalyService
from svc_monitor.api.dependencies import FeaturesDep


def get_anomaly(features: FeaturesDep) -> AnomalyService:
    return features.anomaly


AnomalyDep = Annotated[AnomalyService, Depends(get_anomaly)]
