"""Settings page: the runtime settings (poll intervals, anomaly cache, history retention)
as a form, and the License section (routes/license.py).

Reads and changes go through RuntimeSettingsService, as `GET/PUT /api/settings` and
`POST /api/settings/reset` do, and the form is validated by the API's own
`RuntimeSettingsUpdate`, so the page accepts exactly what the API accepts. A refused
value shows the form again with the field's message, and nothing is stored.
"""

import re
from dataclasses import dataclass

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse
from pydantic import ValidationError

from svc_monitor.runtime_settings.schemas import (
    RuntimeSettingsRead,
    RuntimeSettingsUpdate,
    RuntimeSettingsValues,
)
from svc_monitor.runtime_settings.service import RETENTION, RetentionFollowsTier
from svc_monitor.web.dependencies import FromThisPage, Ui, UiDep
from svc_monitor.web.forms import parse_form
from svc_monitor.web.pages import Page
from svc_monitor.web.routes.license import license_context
from svc_monitor.web.routes.tokens import tokens_context

PAGE = Page("settings", "/settings", "Settings", needs_connection=False)
router = APIRouter(include_in_schema=False)


@dataclass(frozen=True, slots=True)
class Field:
    name: str  # the API's field, and the form's
    label: str
    env: str  # the environment variable that seeds it ("" for none)
    help: str
    unit: str = "ms"
    optional: bool = False  # left empty, the value is null (for retention: keep everything)
    # "index_map": a name -> whole number mapping, typed as `name=value, name=value`.
    kind: str = "number"


FIELDS = (
    Field(
        "anomalyPollIntervalMs",
        "INFO poll interval",
        "ANOMALY_POLL_INTERVAL_MS",
        "How often each instance's INFO is read: dashboard values, history and anomaly checks.",
    ),
    Field(
        "fullInfoIntervalMs",
        "Full INFO interval",
        "FULL_INFO_INTERVAL_MS",
        "How often a pass reads the full INFO; the passes between read only the sections "
        "judged each second. 0 reads the full INFO on every pass.",
    ),
    Field(
        "auditPollIntervalMs",
        "Audit poll interval",
        "AUDIT_POLL_INTERVAL_MS",
        "How often ACL LOG is read into the audit trail.",
    ),
    Field(
        "clientAnalyticsPollIntervalMs",
        "Client analytics poll interval",
        "CLIENT_ANALYTICS_POLL_INTERVAL_MS",
        "How often CLIENT LIST is sampled for the client analytics charts.",
    ),
    Field(
        "vectorIndexPollIntervalMs",
        "Vector index poll interval",
        "VECTOR_INDEX_POLL_INTERVAL_MS",
        "How often each search index's FT.INFO is read where a search engine is loaded.",
    ),
    Field(
        "searchSlaP99Us",
        "Search SLA (p99)",
        "SEARCH_SLA_P99_US",
        "The p99 every search index's searches should stay under (Pro): over it, "
        "vector_index.sla_breached; back under 90 % of it, vector_index.sla_recovered.",
        unit="µs",
    ),
    Field(
        "searchSlaByIndex",
        "Search SLA per index",
        "",  # no environment variable seeds it
        "An index's own p99 SLA, as name=microseconds separated by commas "
        "(docs_idx=20000, cache_idx=0); 0 turns an index's SLA off. Empty: every index "
        "has the SLA above. Names holding a comma or '=' are set through the API.",
        unit="µs",
        kind="index_map",
    ),
    Field(
        "anomalyCacheTtlMs",
        "Anomaly cache lifetime",
        "ANOMALY_CACHE_TTL_MS",
        "How long detected anomalies are kept in memory.",
    ),
    Field(
        "anomalyPrometheusIntervalMs",
        "Anomaly export interval",
        "ANOMALY_PROMETHEUS_INTERVAL_MS",
        "How often anomaly summaries are refreshed for the Prometheus export.",
    ),
    Field(
        "retentionDays",
        "History retention",
        "LOCAL_RETENTION_DAYS",
        "Days of history kept; empty keeps everything. Older samples go within the hour, "
        "other history within the day.",
        unit="days",
        optional=True,
    ),
)


@dataclass(frozen=True, slots=True)
class SettingsForm:
    """What the form shows: the values (as typed, after a refusal) and where each comes from."""

    current: RuntimeSettingsRead
    defaults: RuntimeSettingsValues
    values: dict[str, str]
    errors: dict[str, str]
    message: str | None = None  # what the last action did

    def changed(self, name: str) -> bool:
        """Whether the value in force differs from its environment default."""
        return bool(getattr(self.current.settings, name) != getattr(self.defaults, name))


async def _form(
    ui: Ui,
    *,
    values: dict[str, str] | None = None,
    errors: dict[str, str] | None = None,
    message: str | None = None,
) -> SettingsForm:
    service = ui.services.runtime_settings
    current = await service.read()
    shown = {f.name: _shown(getattr(current.settings, f.name)) for f in FIELDS}
    return SettingsForm(current, service.defaults(), shown | (values or {}), errors or {}, message)


def _shown(value: int | dict[str, int] | None) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{name}={number}" for name, number in sorted(value.items()))
    return "" if value is None else str(value)


def _index_map(text: str) -> dict[str, int] | None:
    """`a=1, b=2` as {"a": 1, "b": 2}; empty text is {}; None when it is not of that form."""
    found: dict[str, int] = {}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        name, equals, number = item.rpartition("=")
        if not equals or not name.strip() or not _WHOLE_NUMBER.fullmatch(number.strip()):
            return None
        found[name.strip()] = int(number.strip())
    return found


# A whole number as typed; bounded, as int() refuses more than 4,300 digits.
_WHOLE_NUMBER = re.compile(r"[+-]?[0-9]{1,4000}")


def _typed(text: str) -> int | str:
    """A form's whole number as the int the API's strict model takes; anything else is left
    as typed, for the model to refuse with the field's message."""
    return int(text) if _WHOLE_NUMBER.fullmatch(text) else text


def validate(values: dict[str, str]) -> RuntimeSettingsUpdate | dict[str, str]:
    """The API's update model for the form's fields, or the problem of each bad field."""
    typed = {f.name: values.get(f.name, "").strip() for f in FIELDS}
    data: dict[str, int | str | dict[str, int] | None] = {
        name: _typed(text) for name, text in typed.items()
    }
    for f in FIELDS:
        if f.optional and not typed[f.name]:
            data[f.name] = None
        if f.kind == "index_map":
            mapping = _index_map(typed[f.name])
            if mapping is None:
                return {f.name: f"{f.label}: write name=microseconds, separated by commas"}
            data[f.name] = mapping
    try:
        return RuntimeSettingsUpdate.model_validate(data)
    except ValidationError as exc:
        labels = {f.name: f.label for f in FIELDS}
        problems: dict[str, str] = {}
        for error in exc.errors():
            name = str(error["loc"][0]) if error["loc"] else "form"
            value = typed.get(name) or ""
            detail = "it is required" if value == "" else str(error["msg"]).lower()
            # Name the field and echo what was typed: the form is shown again with it.
            problems.setdefault(name, f"{labels.get(name, name)}: {detail}")
        return problems


@router.get("/settings")
async def settings_page(ui: UiDep) -> HTMLResponse:
    return ui.page(
        PAGE,
        "settings/page.html",
        form=await _form(ui),
        fields=FIELDS,
        **license_context(ui),
        **await tokens_context(ui),
    )


@router.post("/ui/settings", dependencies=[FromThisPage])
async def save_settings(request: Request, ui: UiDep) -> HTMLResponse:
    typed = parse_form(await request.body())
    values = {f.name: typed.get(f.name, "") for f in FIELDS}
    change = validate(values)
    if isinstance(change, dict):
        form = await _form(ui, values=values, errors=change, message=None)
        return ui.fragment("settings/form.html", form=form, fields=FIELDS)
    service = ui.services.runtime_settings
    current = (await service.read()).settings
    # Store only what the user changed: an untouched field keeps following its
    # environment default if it has not been saved before.
    changed = {
        name: value for name, value in change.changes().items() if getattr(current, name) != value
    }
    if changed:
        try:
            await service.update(RuntimeSettingsUpdate.model_validate(changed))
        except RetentionFollowsTier as refused:  # cloud mode: the window is the licence's
            form = await _form(ui, values=values, errors={RETENTION: refused.message})
            return ui.fragment("settings/form.html", form=form, fields=FIELDS)
        message = f"Saved {len(changed)} change{'s' if len(changed) != 1 else ''}."
    else:
        message = "Nothing changed."
    form = await _form(ui, message=message)
    return ui.fragment("settings/form.html", form=form, fields=FIELDS)


@router.post("/ui/settings/reset", dependencies=[FromThisPage])
async def reset_settings(ui: UiDep) -> HTMLResponse:
    await ui.services.runtime_settings.reset()
    form = await _form(ui, message="Every setting is back to its environment default.")
    return ui.fragment("settings/form.html", form=form, fields=FIELDS)
