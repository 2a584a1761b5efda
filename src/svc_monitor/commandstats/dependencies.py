"""FastAPI dependencies of the commandstats domain."""

from typing import Annotated

from fastapi import Depends

from svc_monitor.api.dependencies import ServicesDep
from svc_monitor.commandstats.service import CommandstatsService


def get_commandstats(services: ServicesDep) -> CommandstatsService:
    return services.commandstats


CommandstatsDep = Annotated[CommandstatsService, Depends(get_commandstats)]
