"""FastAPI dependencies of the commandstats domain."""

from typing import Annotated

from fastapi import Depends

from svc_monitor.api.dependencies import FeaturesDep
from svc_monitor.commandstats.service import CommandstatsService


def get_commandstats(features: FeaturesDep) -> CommandstatsService:
    return features.commandstats


CommandstatsDep = Annotated[CommandstatsService, Depends(get_commandstats)]
