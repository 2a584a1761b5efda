"""MONITOR page: the preflight, the start form (admins), the captures, and one capture's view
with its live tail (static/monitor.js reads /api/monitor/ws), stop and export.

Every read and change goes through MonitorService (console/monitor/), the same calls as
/api/monitor/*; a member sees the page whole except the controls that change things,
which auth/roles.py refuses them anyway. Where detection found MONITOR missing (renamed
away, or disabled by a managed provider), the preflight and the start form give way to
that explanation; the stored captures stay listed.
"""

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request, Response
from fastapi.responses import HTMLResponse

from svc_monitor.auth.dependencies.access import principal_of
from svc_monitor.console.monitor.models import CaptureSession
from svc_monitor.console.monitor.service import (
    DEFAULT_DURATION_MS,
    MAX_DURATION_MS,
    TAIL_BACKLOG,
)
from svc_monitor.engine.capabilities import unavailable_reason
from svc_monitor.errors import AppError
from svc_monitor.web.dependencies import FromThisPage, Ui, UiDep
from svc_monitor.web.forms import parse_form
from svc_monitor.web.live import pushed
from svc_monitor.web.pages import Page
from svc_monitor.web.sections import Section, load

PAGE = Page("monitor", "/monitor", "MONITOR", live_only=True)
router = APIRouter(include_in_schema=False)

DURATIONS = {
    10_000: "10 seconds",
    30_000: "30 seconds",
    60_000: "1 minute",
    120_000: "2 minutes",
    MAX_DURATION_MS: "5 minutes",
}
LIST_SIZE = 20
REFRESH_MS = 2_000

SessionId = Annotated[int, Path(ge=1, le=2**31 - 1)]
DurationQuery = Annotated[int | None, Query(alias="durationMs")]


def _duration(value: int | str | None) -> int:
    """A duration the form offers; anything else is the default, never an error."""
    try:
        chosen = int(value) if value is not None else DEFAULT_DURATION_MS
    except ValueError:
        return DEFAULT_DURATION_MS
    return chosen if chosen in DURATIONS else DEFAULT_DURATION_MS


def _context(ui: Ui) -> dict[str, Any]:
    return {
        "durations": DURATIONS,
        "refresh_ms": REFRESH_MS,
        "backlog": TAIL_BACKLOG,
        "redacting": ui.services.settings.MONITOR_REDACT_VALUES,
    }


def monitor_missing(ui: Ui) -> Section[None] | None:
    """Why no capture can start here, when detection found MONITOR missing; else None."""
    identity = ui.shell.identity
    if identity is None or identity.capabilities.has_monitor:
        return None  # unknown yet, or listed: the preflight tries it and says what it found
    return Section.unsupported(unavailable_reason(identity.capabilities, "monitor"))


async def _captures(ui: Ui) -> Section[list[CaptureSession]]:
    connection = ui.shell.connection
    if connection is None:
        return Section(value=[])
    return await load(ui.features.monitor.list_captures(connection, limit=LIST_SIZE, offset=0))


@router.get("/monitor")
async def monitor_page(ui: UiDep) -> HTMLResponse:
    """The preflight, the start form and this connection's captures."""
    if pushed(ui.shell):
        return ui.page(PAGE, "monitor/page.html")
    return ui.page(
        PAGE,
        "monitor/page.html",
        captures=await _captures(ui),
        duration=DEFAULT_DURATION_MS,
        missing=monitor_missing(ui),
        **_context(ui),
    )


@router.get("/monitor/{session_id}")
async def capture_page(ui: UiDep, session_id: SessionId) -> HTMLResponse:
    """One capture: what it is, its live tail, stop, delete and export."""
    capture = await load(ui.features.monitor.get(session_id))
    return ui.page(PAGE, "monitor/capture.html", capture=capture, **_context(ui))


@router.get("/ui/monitor/preflight")
async def preflight_panel(ui: UiDep, duration_ms: DurationQuery = None) -> HTMLResponse:
    """What starting a capture would do now, for the chosen duration."""
    if pushed(ui.shell):
        return ui.fragment("shell/needs_live.html")
    missing = monitor_missing(ui)
    if missing is not None:  # the explanation, with no probe that would only be refused
        return ui.fragment("monitor/preflight.html", preflight=missing, **_context(ui))
    connection = ui.shell.connection
    preflight = None
    if connection is not None:
        monitor = ui.features.monitor
        caps = monitor.caps(duration_ms=_duration(duration_ms), max_lines=None, max_bytes=None)
        preflight = await load(monitor.preflight(connection, caps))
    return ui.fragment("monitor/preflight.html", preflight=preflight, **_context(ui))


@router.get("/ui/monitor/sessions")
async def captures_list(ui: UiDep) -> HTMLResponse:
    """The captures table alone, which the page refreshes every few seconds."""
    return ui.fragment("monitor/sessions.html", captures=await _captures(ui), **_context(ui))


@router.get("/ui/monitor/sessions/{session_id}")
async def capture_facts(ui: UiDep, session_id: SessionId) -> HTMLResponse:
    """One capture's facts and actions, refreshed while it runs."""
    capture = await load(ui.features.monitor.get(session_id))
    return ui.fragment("monitor/facts.html", capture=capture, **_context(ui))


@router.post("/ui/monitor/sessions", dependencies=[FromThisPage])
async def start_capture(request: Request, ui: UiDep) -> Response:
    """Start a capture from the form; the browser then opens its view."""
    values = parse_form(await request.body())
    duration = _duration(values.get("durationMs"))
    connection = ui.shell.connection
    error = "Choose a connection first."
    if connection is not None:
        monitor = ui.features.monitor
        principal = principal_of(request)
        try:
            session = await monitor.start(
                connection,
                monitor.caps(duration_ms=duration, max_lines=None, max_bytes=None),
                requested_by=principal.name if principal is not None else None,
            )
        except AppError as exc:
            error = exc.message
        else:
            return Response(status_code=204, headers={"HX-Redirect": f"/monitor/{session.id}"})
    return ui.fragment("monitor/start.html", duration=duration, error=error, **_context(ui))


@router.post("/ui/monitor/sessions/{session_id}/stop", dependencies=[FromThisPage])
async def stop_capture(request: Request, ui: UiDep, session_id: SessionId) -> HTMLResponse:
    """Stop a running capture; answers with its facts as they are now."""
    principal = principal_of(request)
    error = None
    try:
        await ui.features.monitor.stop(session_id, by=principal.name if principal else None)
    except AppError as exc:
        error = exc.message
    capture = await load(ui.features.monitor.get(session_id))
    return ui.fragment("monitor/facts.html", capture=capture, error=error, **_context(ui))


@router.post("/ui/monitor/sessions/{session_id}/delete", dependencies=[FromThisPage])
async def delete_capture(ui: UiDep, session_id: SessionId) -> Response:
    """Delete a capture that has ended; the browser goes back to the list."""
    await ui.features.monitor.delete(session_id)
    return Response(status_code=204, headers={"HX-Redirect": "/monitor"})
