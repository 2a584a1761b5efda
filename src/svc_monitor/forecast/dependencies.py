"""FastAPI dependencies of the forecast domain."""

from typing import Annotated

from fastapi import Depends

from svc_monitor.api.dependencies import FeaturesDep
from svc_monitor.forecast.service import ForecastService


def get_forecast(features: FeaturesDep) -> ForecastService:
    return features.forecast


ForecastDep = Annotated[ForecastService, Depends(get_forecast)]
