"""FastAPI dependencies of the latency domain."""

from typing import Annotated

from fastapi import Depends

from svc_monitor.latency.service import LatencyService
from svc_monitor.services import ServicesDep


def get_latency(services: ServicesDep) -> LatencyService:
    return services.latency


LatencyDep = Annotated[LatencyService, Depends(get_latency)]
