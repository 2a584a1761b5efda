"""FastAPI dependencies of the slow-log domain."""

from typing import Annotated

from fastapi import Depends

from svc_monitor.api.dependencies import FeaturesDep
from svc_monitor.slowlog.service import SlowlogService


def get_slowlog(features: FeaturesDep) -> SlowlogService:
    return features.slowlog


SlowlogDep = Annotated[SlowlogService, Depends(get_slowlog)]
