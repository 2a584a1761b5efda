"""FastAPI dependencies of the anomaly domain."""

from typing import Annotated

from fastapi import Depends

from svc_monitor.anomaly.service import AnomalyService
from svc_monitor.api.dependencies import ServicesDep


def get_anomaly(services: ServicesDep) -> AnomalyService:
    return services.anomaly


AnomalyDep = Annotated[AnomalyService, Depends(get_anomaly)]
