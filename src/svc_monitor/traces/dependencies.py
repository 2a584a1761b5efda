"""FastAPI dependencies of the traces domain."""

from typing import Annotated

from fastapi import Depends

from svc_monitor.api.dependencies import ServicesDep
from svc_monitor.traces.service import TraceService


def get_traces(services: ServicesDep) -> TraceService:
    return services.traces


TracesDep = Annotated[TraceService, Depends(get_traces)]
