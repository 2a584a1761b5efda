"""FastAPI dependencies of the key analytics domain."""

from typing import Annotated

from fastapi import Depends

from svc_monitor.api.dependencies import FeaturesDep
from svc_monitor.key_analytics.service import KeyAnalyticsService


def get_key_analytics(features: FeaturesDep) -> KeyAnalyticsService:
    return features.key_analytics


KeyAnalyticsDep = Annotated[KeyAnalyticsService, Depends(get_key_analytics)]
