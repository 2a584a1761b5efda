"""FastAPI dependencies of the commandstats domain."""

from typing import Annotated

from fastapi import Depends

from svc_monitor.commandstats.service import CommandstatsService
from svc_monitor.services import FeaturesDep


def get_commandstats(features: FeaturesDep) -> CommandstatsService:
    return features.commandstats


CommandstatsDep = Annotated[CommandstatsService, Depends(get_commandstats)]
