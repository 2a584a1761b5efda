"""Metric forecasting routes (under /api), connection-scoped by X-Connection-Id."""

from typing import Annotated

from fastapi import APIRouter, Path

from svc_monitor.api.error_responses import error_responses
from svc_monitor.connections.dependencies import SelectedConnection
from svc_monitor.forecast.dependencies import ForecastDep
from svc_monitor.forecast.schemas import (
    ForecastRead,
    ForecastSettingsRead,
    ForecastSettingsUpdate,
)

router = APIRouter(tags=["metric forecasting"])

KindPath = Annotated[
    str,
    Path(
        max_length=64,
        description="usedMemory, opsPerSec, cpuTotal or memFragmentation",
    ),
]


@router.get(
    "/metric-forecasting/{metricKind}/forecast",
    response_model=ForecastRead,
    responses=error_responses(400, 404, 422),
)
async def get_metric_forecast(
    metricKind: KindPath, connection: SelectedConnection, forecast: ForecastDep
) -> ForecastRead:
    """The metric's least-squares trend over its rolling window and, when it has a ceiling,
    the projected time to reach it with a band of two standard errors of the slope.
    Fewer than 3 samples or under 30 minutes of them: `insufficientData`."""
    return await forecast.forecast(connection.id, metricKind)


@router.get(
    "/metric-forecasting/{metricKind}/settings",
    response_model=ForecastSettingsRead,
    responses=error_responses(400, 404, 422),
)
async def get_metric_forecast_settings(
    metricKind: KindPath, connection: SelectedConnection, forecast: ForecastDep
) -> ForecastSettingsRead:
    """The connection's forecast settings for the metric: the environment's defaults until
    an admin saves some (`updatedAt` null)."""
    return await forecast.read_settings(connection.id, metricKind)


@router.put(
    "/metric-forecasting/{metricKind}/settings",
    response_model=ForecastSettingsRead,
    responses=error_responses(400, 404, 422),
)
async def update_metric_forecast_settings(
    metricKind: KindPath,
    body: ForecastSettingsUpdate,
    connection: SelectedConnection,
    forecast: ForecastDep,
) -> ForecastSettingsRead:
    """Change any of enabled, ceiling (>= 0.01; null for the kind's default),
    rollingWindowMs and alertThresholdMs (each 60000-86400000)."""
    return await forecast.update_settings(connection.id, metricKind, body)
