"""Forecast: one card per metric (ops/sec, memory, CPU, fragmentation) with its history
and the fitted line drawn ahead (static/forecast.js, uPlot), the time to its ceiling or
its trend, and, for admins, the metric's settings.

Reads and changes go through ForecastService, as the /api/metric-forecasting routes do,
and the form is validated by the API's own ForecastSettingsUpdate. A saved or refused form
answers with its card again (htmx swaps it in place).
"""

import asyncio
from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse
from pydantic import ValidationError

from svc_monitor.errors import Conflict
from svc_monitor.forecast.schemas import ForecastRead, ForecastSettingsRead, ForecastSettingsUpdate
from svc_monitor.web.dependencies import FromThisPage, Ui, UiDep
from svc_monitor.web.forms import parse_form
from svc_monitor.web.pages import Page

PAGE = Page("forecast", "/forecasting", "Forecast")
router = APIRouter(include_in_schema=False)

MINUTE_MS = 60_000
# The form's fields: the windows in minutes on the page, in ms in the API.
FORM_FIELDS = ("enabled", "ceiling", "rollingWindowMinutes", "alertThresholdMinutes")


@dataclass(frozen=True, slots=True)
class Metric:
    kind: str
    title: str
    unit: str  # the chart's and the values' format: bytes, percent, number
    axis: str  # the chart's y axis in words, short enough for its 180 px height


METRICS = (
    Metric("opsPerSec", "Operations per second", "number", "Per second"),
    Metric("usedMemory", "Memory", "bytes", "Memory"),
    Metric("cpuTotal", "CPU", "percent", "CPU"),
    Metric("memFragmentation", "Fragmentation", "number", "Ratio"),
)
_BY_KIND = {m.kind: m for m in METRICS}


@dataclass(frozen=True, slots=True)
class Card:
    metric: Metric
    forecast: ForecastRead
    settings: ForecastSettingsRead
    values: dict[str, str]  # the form's fields, as shown (as typed after a refusal)
    errors: dict[str, str]
    message: str | None = None

    @property
    def chart(self) -> dict[str, Any]:
        """What forecast.js draws: the samples and the fitted line, times in ms."""
        f = self.forecast
        return {
            "unit": self.metric.unit,
            "axis": self.metric.axis,
            "ceiling": f.ceiling,
            "points": [[p.t, p.value] for p in f.points],
            "projection": [[p.t, p.value] for p in f.projection],
        }


def _form_values(settings: ForecastSettingsRead) -> dict[str, str]:
    return {
        "enabled": "on" if settings.enabled else "",
        "ceiling": "" if settings.ceiling is None else f"{settings.ceiling:g}",
        "rollingWindowMinutes": f"{settings.rollingWindowMs / MINUTE_MS:g}",
        "alertThresholdMinutes": f"{settings.alertThresholdMs / MINUTE_MS:g}",
    }


async def _card(
    ui: Ui,
    connection_id: str,
    metric: Metric,
    *,
    values: dict[str, str] | None = None,
    errors: dict[str, str] | None = None,
    message: str | None = None,
) -> Card:
    service = ui.features.forecast
    forecast, settings = await asyncio.gather(
        service.forecast(connection_id, metric.kind),
        service.read_settings(connection_id, metric.kind),
    )
    shown = _form_values(settings) | (values or {})
    return Card(metric, forecast, settings, shown, errors or {}, message)


_LABELS = {
    "ceiling": "Ceiling",
    "rollingWindowMs": "Window",
    "alertThresholdMs": "Alert threshold",
    "enabled": "Enabled",
}


def validate(values: dict[str, str]) -> ForecastSettingsUpdate | dict[str, str]:
    """The API's update model from the form (minutes on the page, ms in the API), or the
    problem of each bad field."""
    data: dict[str, Any] = {"enabled": values.get("enabled") == "on"}
    ceiling = values.get("ceiling", "").strip()
    data["ceiling"] = ceiling or None  # empty: the kind's default
    problems: dict[str, str] = {}
    for name, field in (
        ("rollingWindowMinutes", "rollingWindowMs"),
        ("alertThresholdMinutes", "alertThresholdMs"),
    ):
        typed = values.get(name, "").strip()
        try:
            data[field] = round(float(typed) * MINUTE_MS)
        except ValueError:
            problems[field] = f"{_LABELS[field]}: a number of minutes, please"
    try:
        change = ForecastSettingsUpdate.model_validate(data)
    except ValidationError as exc:
        for error in exc.errors():
            name = str(error["loc"][0]) if error["loc"] else "form"
            problems.setdefault(name, f"{_LABELS.get(name, name)}: {str(error['msg']).lower()}")
        return problems
    return problems or change


@router.get("/forecasting")
async def forecast_page(ui: UiDep) -> HTMLResponse:
    """Capacity forecasts of the selected connection."""
    connection = ui.shell.connection
    if connection is None:
        return ui.page(PAGE, "forecast/page.html", cards=[])
    cards = await asyncio.gather(*(_card(ui, connection.id, m) for m in METRICS))
    return ui.page(PAGE, "forecast/page.html", cards=cards)


@router.post("/ui/forecasting/{metric_kind}/settings", dependencies=[FromThisPage])
async def save_forecast_settings(metric_kind: str, request: Request, ui: UiDep) -> HTMLResponse:
    service = ui.features.forecast
    service.check_kind(metric_kind)
    connection = ui.shell.connection
    if connection is None:
        raise Conflict("Choose a connection first: forecast settings belong to one")
    metric = _BY_KIND[metric_kind]
    typed = parse_form(await request.body())
    change = validate(typed)
    if isinstance(change, dict):
        values = {k: typed.get(k, "") for k in FORM_FIELDS}
        card = await _card(ui, connection.id, metric, values=values, errors=change)
    else:
        await service.update_settings(connection.id, metric_kind, change)
        card = await _card(ui, connection.id, metric, message="Saved.")
    return ui.fragment("forecast/card.html", card=card)
