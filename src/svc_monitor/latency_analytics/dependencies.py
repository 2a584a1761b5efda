"""FastAPI dependencies of the latency domain."""

from typing import Annotated

from fastapi import Depends

from svc_monitor.api.dependencies import FeaturesDep
from svc_monitor.latency_analytics.service import LatencyService


def get_latency(features: FeaturesDep) -> LatencyService:
    return features.latency


LatencyDep = Annotated[LatencyService, Depends(get_latency)]
