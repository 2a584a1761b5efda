"""FastAPI dependencies of the slow-log domain."""

from typing import Annotated

from fastapi import Depends

from svc_monitor.services import ServicesDep
from svc_monitor.slowlog.service import SlowlogService


def get_slowlog(services: ServicesDep) -> SlowlogService:
    return services.slowlog


SlowlogDep = Annotated[SlowlogService, Depends(get_slowlog)]
