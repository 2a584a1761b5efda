"""Anomalies (Pro): the selected connection's correlated groups, newest first, with their
diagnosis and next step, the anomaly events they hold, and each metric's baseline buffer
(warm-up and readiness). Admins resolve a group (with its events) or a single event.

Reads and resolves go through AnomalyService, as /api/anomaly/* do, and resolving needs
an admin as there (auth/roles.py RULES). A resolve answers with the groups-and-events
panel again (htmx swaps it in place), saying what happened. A Community install sees the
page locked; it works for pushed connections (on the fields they push).
"""

from dataclasses import dataclass
from typing import Any, Literal

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from svc_monitor.anomaly.service import AnomalyNotFound
from svc_monitor.detection.anomaly.models import READY_AT, WINDOW
from svc_monitor.errors import Conflict
from svc_monitor.licensing.dependencies import FeatureLocked
from svc_monitor.licensing.models import Feature
from svc_monitor.web.dependencies import FromThisPage, Ui, UiDep
from svc_monitor.web.forms import parse_form
from svc_monitor.web.pages import Page

PAGE = Page("anomalies", "/anomalies", "Anomalies")
router = APIRouter(include_in_schema=False)
GROUPS_SHOWN = 50
EVENTS_SHOWN = 100
# The "Show resolved" toggle sends `resolved=hide` from a hidden field, then
# `resolved=show` from the checkbox when it is ticked: the last value wins.
HIDE = "hide"


@dataclass(frozen=True, slots=True)
class Panel:
    """The groups and events tables, and the outcome of the action that asked for them."""

    groups: list[Any]
    events: list[Any]
    show_resolved: bool
    message: str | None = None
    error: str | None = None


async def _panel(ui: Ui, connection_id: str | None, show_resolved: bool, **outcome: Any) -> Panel:
    if connection_id is None:
        return Panel([], [], show_resolved, **outcome)
    anomaly = ui.features.anomaly
    resolved = None if show_resolved else False
    groups = await anomaly.groups(
        connection_id, since=None, until=None, pattern=None, resolved=resolved, limit=GROUPS_SHOWN
    )
    events = await anomaly.events(
        connection_id,
        since=None,
        until=None,
        metric=None,
        severity=None,
        resolved=resolved,
        limit=EVENTS_SHOWN,
    )
    return Panel(groups, events, show_resolved, **outcome)


@router.get("/anomalies")
async def anomalies_page(request: Request, ui: UiDep) -> HTMLResponse:
    """Correlated anomaly groups, events and baseline buffers of the selected connection
    (Pro)."""
    license = ui.services.license
    if not license.allows(Feature.ANOMALY_DETECTION):
        locked = FeatureLocked(Feature.ANOMALY_DETECTION, license.tier)
        return ui.page(PAGE, "anomalies/page.html", locked=locked.message, off=False)
    anomaly = ui.features.anomaly
    if not anomaly.enabled:
        return ui.page(PAGE, "anomalies/page.html", locked=None, off=True)
    chosen = request.query_params.getlist("resolved")
    show_resolved = not chosen or chosen[-1] != HIDE
    connection = ui.shell.connection
    connection_id = connection.id if connection is not None else None
    panel = await _panel(ui, connection_id, show_resolved)
    buffers = anomaly.buffers(connection_id) if connection_id is not None else []
    return ui.page(
        PAGE,
        "anomalies/page.html",
        locked=None,
        off=False,
        panel=panel,
        buffers=buffers,
        ready_at=READY_AT,
        window=WINDOW,
    )


async def _resolve(
    request: Request, ui: Ui, kind: Literal["group", "event"], row_id: int
) -> HTMLResponse:
    """Resolve one group (with its events) or one event of the selected connection, and
    answer the panel again with what happened."""
    license = ui.services.license
    if not license.allows(Feature.ANOMALY_DETECTION):
        raise FeatureLocked(Feature.ANOMALY_DETECTION, license.tier)
    connection = ui.shell.connection
    if connection is None:
        raise Conflict("Choose a connection first: anomalies belong to one")
    show_resolved = parse_form(await request.body()).get("resolved", "") != HIDE
    anomaly = ui.features.anomaly
    outcome: dict[str, str]
    try:
        if kind == "group":
            newly = await anomaly.resolve_group(connection.id, row_id)
        else:
            newly = await anomaly.resolve_event(connection.id, row_id)
    except AnomalyNotFound:
        outcome = {"error": f"There is no anomaly {kind} {row_id} on this connection."}
    else:
        if newly:
            also = ", with its events" if kind == "group" else ""
            outcome = {"message": f"{kind.title()} {row_id} resolved{also}."}
        else:
            # Someone else got there first (or a second click): it keeps its first time.
            outcome = {"error": f"{kind.title()} {row_id} was already resolved; nothing changed."}
    panel = await _panel(ui, connection.id, show_resolved, **outcome)
    return ui.fragment("anomalies/panel.html", panel=panel)


@router.post("/ui/anomalies/groups/{group_id}/resolve", dependencies=[FromThisPage])
async def resolve_group(group_id: int, request: Request, ui: UiDep) -> HTMLResponse:
    """Mark a correlated group and all its events resolved (admins)."""
    return await _resolve(request, ui, "group", group_id)


@router.post("/ui/anomalies/events/{event_id}/resolve", dependencies=[FromThisPage])
async def resolve_event(event_id: int, request: Request, ui: UiDep) -> HTMLResponse:
    """Mark one anomaly event resolved (admins)."""
    return await _resolve(request, ui, "event", event_id)
