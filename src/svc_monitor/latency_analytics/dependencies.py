"""FastAPI dependencies of the latency domain."""

from typing import Annotated

from fastapi import Depends

from svc_monitor.api.dependencies import FeaturesDep
from svc_monitor.latency_analytics.service import LatencyAnalyticsService


def get_latency_analytics(features: FeaturesDep) -> LatencyAnalyticsService:
    return features.latency_analytics


LatencyAnalyticsDep = Annotated[LatencyAnalyticsService, Depends(get_latency_analytics)]
