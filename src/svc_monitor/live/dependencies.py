"""FastAPI dependencies of the live-metrics domain."""

from typing import Annotated

from fastapi import Depends

from svc_monitor.api.dependencies import FeaturesDep
from svc_monitor.live.service import LiveService


def get_live(features: FeaturesDep) -> LiveService:
    return features.live


LiveDep = Annotated[LiveService, Depends(get_live)]
