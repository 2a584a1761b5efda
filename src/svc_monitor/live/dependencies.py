"""FastAPI dependencies of the live-metrics domain."""

from typing import Annotated

from fastapi import Depends

from svc_monitor.api.dependencies import FeaturesDep
from svc_monitor.live.service import LiveMetricsService


def get_live_metrics(features: FeaturesDep) -> LiveMetricsService:
    return features.live


LiveMetricsDep = Annotated[LiveMetricsService, Depends(get_live_metrics)]
