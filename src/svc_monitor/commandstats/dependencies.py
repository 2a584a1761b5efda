"""FastAPI dependencies of the commandstats domain."""

from typing import Annotated

from fastapi import Depends

from svc_monitor.commandstats.service import CommandstatsService
from svc_monitor.services import ServicesDep


def get_commandstats(services: ServicesDep) -> CommandstatsService:
    return services.commandstats


CommandstatsDep = Annotated[CommandstatsService, Depends(get_commandstats)]
