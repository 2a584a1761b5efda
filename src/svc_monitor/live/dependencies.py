"""FastAPI dependencies of the live-metrics domain."""

from typing import Annotated

from fastapi import Depends

from svc_monitor.live.service import LiveMetricsService
from svc_monitor.services import FeaturesDep


def get_live_metrics(features: FeaturesDep) -> LiveMetricsService:
    return features.live_metrics


LiveMetricsDep = Annotated[LiveMetricsService, Depends(get_live_metrics)]
