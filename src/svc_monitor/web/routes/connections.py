"""The connection switcher and the Add / Edit / Manage Connections dialogs.

Every change goes through ConnectionService, exactly as the REST API's does; a
successful change reloads the page (`HX-Refresh`) so every part shows the new state.
"""

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from svc_monitor.connections.schemas import ConnectionCreate, ConnectionTest, ConnectionUpdate
from svc_monitor.errors import AppError
from svc_monitor.web.dependencies import UI_HEADERS, FromThisPage, Ui, UiDep
from svc_monitor.web.forms import ConnectionForm, parse_form, to_request
from svc_monitor.web.shell import CONNECTION_COOKIE

router = APIRouter(prefix="/ui", include_in_schema=False)

_COOKIE_MAX_AGE_S = 365 * 24 * 3600


@router.post("/connection", dependencies=[FromThisPage])
async def choose_connection(request: Request, ui: UiDep) -> Response:
    """Switch every page to another connection."""
    chosen = parse_form(await request.body()).get("connection", "")
    connection = await ui.services.connections.get(chosen)  # 404 for an unknown id
    return _reload(choose=connection.id)


@router.get("/connections/status")
async def connection_status(ui: UiDep) -> HTMLResponse:
    """The chosen connection's status badge, refreshed by the page."""
    return ui.fragment("connections/status.html")


@router.get("/connections")
async def manage_connections(ui: UiDep) -> HTMLResponse:
    return ui.fragment("connections/manage.html")


@router.get("/connections/new")
async def new_connection(ui: UiDep) -> HTMLResponse:
    form = ConnectionForm({"port": "6379"})
    return ui.fragment("connections/dialog.html", form=form, editing=None)


@router.get("/connections/{connection_id}/edit")
async def edit_connection(connection_id: str, ui: UiDep) -> HTMLResponse:
    c = await ui.services.connections.get(connection_id)
    values = {"name": c.name, "host": c.host, "port": str(c.port), "username": c.username}
    if c.tls:
        values["tls"] = "on"
    form = ConnectionForm(values)
    return ui.fragment("connections/dialog.html", form=form, editing=c)


@router.post("/connections/test", dependencies=[FromThisPage])
async def test_connection(request: Request, ui: UiDep) -> HTMLResponse:
    """Try what the form holds; the engine's own error, or its type and version."""
    values = parse_form(await request.body())
    body = to_request(ConnectionTest, values)
    if isinstance(body, dict):
        return _result(ui, errors=body)
    try:
        outcome = await ui.services.connections.test(body)
    except AppError as exc:
        return _result(ui, errors={exc.field or "form": exc.message})
    return ui.fragment("connections/result.html", outcome=outcome, errors={}, saved=False)


@router.post("/connections", dependencies=[FromThisPage])
async def create_connection(request: Request, ui: UiDep) -> Response:
    body = to_request(ConnectionCreate, parse_form(await request.body()))
    if isinstance(body, dict):
        return _result(ui, errors=body)
    try:
        connection = await ui.services.connections.create(body)
    except AppError as exc:
        return _result(ui, errors={exc.field or "form": exc.message})
    return _reload(choose=connection.id)


@router.post("/connections/{connection_id}", dependencies=[FromThisPage])
async def update_connection(connection_id: str, request: Request, ui: UiDep) -> Response:
    body = to_request(ConnectionUpdate, parse_form(await request.body()), editing=True)
    if isinstance(body, dict):
        return _result(ui, errors=body)
    try:
        await ui.services.connections.update(connection_id, body)
    except AppError as exc:
        return _result(ui, errors={exc.field or "form": exc.message})
    return _reload()


@router.post("/connections/{connection_id}/default", dependencies=[FromThisPage])
async def set_default(connection_id: str, ui: UiDep) -> Response:
    await ui.services.connections.set_default(connection_id)
    return _reload()


@router.post("/connections/{connection_id}/delete", dependencies=[FromThisPage])
async def delete_connection(connection_id: str, ui: UiDep) -> Response:
    await ui.services.connections.delete(connection_id)
    return _reload()


def _result(ui: Ui, *, errors: dict[str, str]) -> HTMLResponse:
    return ui.fragment("connections/result.html", outcome=None, errors=errors, saved=False)


def _reload(*, choose: str | None = None) -> Response:
    response = Response(status_code=200, headers={**UI_HEADERS, "HX-Refresh": "true"})
    if choose is not None:
        response.set_cookie(
            CONNECTION_COOKIE, choose, max_age=_COOKIE_MAX_AGE_S, httponly=True, samesite="lax"
        )
    return response
