"""FastAPI dependencies of the client analytics domain."""

from typing import Annotated

from fastapi import Depends

from svc_monitor.api.dependencies import FeaturesDep
from svc_monitor.client_analytics.service import ClientAnalyticsService


def get_client_analytics(features: FeaturesDep) -> ClientAnalyticsService:
    return features.client_analytics


ClientAnalyticsDep = Annotated[ClientAnalyticsService, Depends(get_client_analytics)]
