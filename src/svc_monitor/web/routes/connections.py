"""The connection switcher and the Add / Edit / Manage Connections dialogs.

Every change goes through ConnectionService, exactly as the REST API's does; a
successful change reloads the page (`HX-Refresh`) so every part shows the new state.
The Direct tab also takes TLS material and an SSH bastion (web/forms.py turns them into
the API's fields); an edit shows what is stored as the API reads it (never a secret).
The dialog's OTLP push tab registers a push connection and shows the Collector
configuration for it; the switcher lists discovered pushers to register or dismiss.
"""

import re
from dataclasses import dataclass, field
from typing import Annotated

from fastapi import APIRouter, Path, Request
from fastapi.responses import HTMLResponse, Response

from svc_monitor.auth.dependencies.origin import reached_base
from svc_monitor.connections.models import Connection
from svc_monitor.connections.schemas import (
    ConnectionCreate,
    ConnectionTest,
    ConnectionUpdate,
    to_read,
)
from svc_monitor.errors import AppError, Conflict
from svc_monitor.kit.addresses import is_plain_host
from svc_monitor.otlp.ingest.collector_config import VERSION_PATTERN, Engine, collector_config
from svc_monitor.web.dependencies import UI_HEADERS, FromThisPage, Ui, UiDep
from svc_monitor.web.forms import (
    CONNECTION_FORM_BYTES,
    ConnectionForm,
    parse_form,
    read_form,
    to_push_request,
    to_request,
)
from svc_monitor.web.shell import CONNECTION_COOKIE

router = APIRouter(prefix="/ui", include_in_schema=False)

_COOKIE_MAX_AGE_S = 365 * 24 * 3600
REPINNED = "Pin cleared: the next connection will trust and pin the bastion's key."


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
async def new_connection(request: Request, ui: UiDep) -> HTMLResponse:
    """The Add Connection dialog; `?source=push` opens its OTLP push tab, filled in from
    `name`, `host` and `port` when given (a discovered instance's Register)."""
    query = request.query_params
    if query.get("source") != "push":
        return _direct_dialog(ui, None)
    values = {name: query.get(name, "")[:255] for name in ("name", "host", "port")}
    values["port"] = values["port"] or "6379"
    return _push_dialog(ui, values, editing=None)


@router.get("/connections/{connection_id}/edit")
async def edit_connection(connection_id: str, ui: UiDep) -> HTMLResponse:
    c = await ui.services.connections.get(connection_id)
    if c.pushed:
        values = {"name": c.name, "host": c.host, "port": str(c.port)}
        push = ui.services.connections.push_status(c)
        if push is not None:
            values["engine"] = push.engine
            values["valkey_version"] = (push.version or "") if push.engine == "valkey" else ""
        return _push_dialog(ui, values, editing=c)
    return _direct_dialog(ui, c)


@router.get("/connections/collector-config")
async def collector_config_panel(request: Request, ui: UiDep) -> HTMLResponse:
    """The push form's Collector configuration, for the address as typed so far."""
    values = dict(request.query_params)
    return ui.fragment("connections/collector_config.html", collector=_collector(ui, values))


@router.post("/connections/discovered/{address}/dismiss", dependencies=[FromThisPage])
async def dismiss_discovered(
    address: Annotated[str, Path(max_length=300)], ui: UiDep
) -> HTMLResponse:
    """Hide a discovered instance for 24 hours; answers with the list without it."""
    ui.services.discovery.dismiss(address)
    return ui.fragment(
        "shell/discovered.html", discovered=ui.services.discovery.visible(), opened=True
    )


@router.post("/connections/test", dependencies=[FromThisPage])
async def test_connection(request: Request, ui: UiDep) -> HTMLResponse:
    """Try what the form holds; the engine's own error, or its type and version (and the
    bastion's host key when it goes through an SSH tunnel)."""
    values = await read_form(request, limit=CONNECTION_FORM_BYTES)
    body = to_request(ConnectionTest, values)
    if isinstance(body, dict):
        return _result(ui, errors=body)
    try:
        outcome = await ui.services.connections.test(body)
    except AppError as exc:
        return _result(ui, errors={exc.field or "form": exc.message})
    return ui.fragment("connections/result.html", outcome=outcome, errors={}, saved=False)


@router.post("/connections/{connection_id}/test", dependencies=[FromThisPage])
async def test_connection_change(connection_id: str, request: Request, ui: UiDep) -> HTMLResponse:
    """The Edit dialog's Test: the form as a change of the stored connection, so the
    password, TLS key and SSH secrets left blank (kept on save) are tried too."""
    current = await ui.services.connections.get(connection_id)
    values = await read_form(request, limit=CONNECTION_FORM_BYTES)
    body = to_request(ConnectionUpdate, values, editing=True, stored_tunnel=current.ssh_tunnel)
    if isinstance(body, dict):
        return _result(ui, errors=body)
    try:
        outcome = await ui.services.connections.test_change(connection_id, body)
    except AppError as exc:
        return _result(ui, errors={exc.field or "form": exc.message})
    return ui.fragment("connections/result.html", outcome=outcome, errors={}, saved=False)


@router.post("/connections", dependencies=[FromThisPage])
async def create_connection(request: Request, ui: UiDep) -> Response:
    values = await read_form(request, limit=CONNECTION_FORM_BYTES)
    if values.get("source") == "push":
        body = to_push_request(ConnectionCreate, values)
    else:
        body = to_request(ConnectionCreate, values)
    if isinstance(body, dict):
        return _result(ui, errors=body)
    try:
        connection = await ui.services.connections.create(body)
    except AppError as exc:
        return _result(ui, errors={exc.field or "form": exc.message})
    return _reload(choose=connection.id)


@router.post("/connections/{connection_id}", dependencies=[FromThisPage])
async def update_connection(connection_id: str, request: Request, ui: UiDep) -> Response:
    current = await ui.services.connections.get(connection_id)
    values = await read_form(request, limit=CONNECTION_FORM_BYTES)
    if current.pushed:
        body = to_push_request(ConnectionUpdate, values, editing=True)
    else:
        body = to_request(ConnectionUpdate, values, editing=True, stored_tunnel=current.ssh_tunnel)
    if isinstance(body, dict):
        return _result(ui, errors=body)
    try:
        await ui.services.connections.update(connection_id, body)
    except AppError as exc:
        return _result(ui, errors={exc.field or "form": exc.message})
    return _reload()


@router.post("/connections/{connection_id}/ssh/repin", dependencies=[FromThisPage])
async def repin_ssh_host_key(connection_id: str, ui: UiDep) -> HTMLResponse:
    """Clear the pinned bastion key (a bastion rebuilt on purpose); answers with the Edit
    dialog again, saying so, or why not."""
    connections = ui.services.connections
    try:
        connection = await connections.repin_ssh_host_key(connection_id)
    except Conflict as exc:  # no tunnel (any more): nothing to re-pin
        current = await connections.get(connection_id)
        if current.pushed:
            raise  # no Direct tab to show it in: the page's toast says it
        return _direct_dialog(ui, current, problem=exc.message)
    return _direct_dialog(ui, connection, notice=REPINNED)


@router.post("/connections/{connection_id}/default", dependencies=[FromThisPage])
async def set_default(connection_id: str, ui: UiDep) -> Response:
    await ui.services.connections.set_default(connection_id)
    return _reload()


@router.post("/connections/{connection_id}/delete", dependencies=[FromThisPage])
async def delete_connection(connection_id: str, ui: UiDep) -> Response:
    await ui.services.connections.delete(connection_id)
    return _reload()


@dataclass(frozen=True, slots=True)
class CollectorView:
    """The configuration for the push form's values, or what to type first."""

    text: str | None = None
    notes: list[str] = field(default_factory=list)
    problem: str = ""


def _collector(ui: Ui, values: dict[str, str]) -> CollectorView:
    host, port = values.get("host", "").strip(), values.get("port", "").strip()
    version = values.get("valkey_version", "").strip()
    engine: Engine = "valkey" if values.get("engine") == "valkey" else "redis"
    if not host:
        return CollectorView(problem="Type the host the Collector reports.")
    if not is_plain_host(host) or len(host) > 255:
        return CollectorView(problem=f"'{host}' is not a host name or IP address.")
    if not (port.isascii() and port.isdigit() and 1 <= int(port) <= 65535):
        return CollectorView(problem="The port is a number from 1 to 65535.")
    if engine == "valkey" and version and not re.fullmatch(VERSION_PATTERN, version):
        return CollectorView(problem=f"'{version}' is not a Valkey version such as 9.0.0.")
    settings = ui.services.settings
    text = collector_config(
        host=host,
        port=int(port),
        service_url=reached_base(ui.request, settings),
        engine=engine,
        valkey_version=version or None,
        token=settings.OTEL_INGEST_TOKEN is not None,
    )
    notes = []
    if not settings.OTEL_INGEST_ENABLED:
        notes.append(
            "OTLP ingest is off here (OTEL_INGEST_ENABLED=false): svc-monitor answers the "
            "Collector 404 until it is turned on."
        )
    if settings.OTEL_INGEST_TOKEN is None:
        notes.append(
            "OTEL_INGEST_TOKEN is not set: svc-monitor takes metrics from anyone who can "
            "reach it. Set it, and the configuration gains the bearer header."
        )
    return CollectorView(text=text, notes=notes)


def _direct_dialog(
    ui: Ui, c: Connection | None, *, notice: str = "", problem: str = ""
) -> HTMLResponse:
    """The Direct tab, empty or filled from a stored connection (its secrets never)."""
    values = {"port": "6379", "ssh_port": "22", "ssh_auth": "password"}
    shown = None
    if c is not None:
        shown = to_read(c, None)
        values.update(name=c.name, host=c.host, port=str(c.port), username=c.username)
        values.update(tls="on" if c.tls else "", tls_insecure="on" if c.tls_insecure else "")
    if shown is not None and shown.sshTunnel is not None:
        tunnel = shown.sshTunnel
        values.update(ssh="on", ssh_host=tunnel.host, ssh_port=str(tunnel.port))
        values.update(ssh_username=tunnel.username, ssh_auth=tunnel.authMethod)
        values.update(ssh_key_path=tunnel.privateKeyPath or "")
    return ui.fragment(
        "connections/dialog.html",
        form=ConnectionForm(values),
        editing=c,
        shown=shown,
        push=False,
        key_files=ui.services.settings.SVC_SSH_KEY_DIR is not None,
        notice=notice,
        problem=problem,
    )


def _push_dialog(ui: Ui, values: dict[str, str], *, editing: Connection | None) -> HTMLResponse:
    return ui.fragment(
        "connections/dialog.html",
        form=ConnectionForm(values),
        editing=editing,
        push=True,
        collector=_collector(ui, values),
    )


def _result(ui: Ui, *, errors: dict[str, str]) -> HTMLResponse:
    return ui.fragment("connections/result.html", outcome=None, errors=errors, saved=False)


def _reload(*, choose: str | None = None) -> Response:
    response = Response(status_code=200, headers={**UI_HEADERS, "HX-Refresh": "true"})
    if choose is not None:
        response.set_cookie(
            CONNECTION_COOKIE, choose, max_age=_COOKIE_MAX_AGE_S, httponly=True, samesite="lax"
        )
    return response
