"""FastAPI dependencies of the client analytics domain."""

from typing import Annotated

from fastapi import Depends

from svc_monitor.client_analytics.service import ClientAnalyticsService
from svc_monitor.services import ServicesDep


def get_client_analytics(services: ServicesDep) -> ClientAnalyticsService:
    return services.client_analytics


ClientAnalyticsDep = Annotated[ClientAnalyticsService, Depends(get_client_analytics)]
