"""Changes: add, test and remove a connection, start and stop a MONITOR capture.

They go through the same REST routes as the UI, so the role the route needs (admin) is
checked there, and a member's token gets the REST API's own refusal.
"""

from typing import Any

from pydantic import Field, SecretStr

from svc_monitor.mcp.api_caller import ApiCaller
from svc_monitor.mcp.output import iso
from svc_monitor.mcp.tools.spec import Scoped, ToolSpec
from svc_monitor.mcp.untrusted import data


class NewConnection(Scoped):
    name: str = Field(min_length=1, max_length=100, description="A name for the connection")
    host: str = Field(min_length=1, max_length=255, description="Host name or address")
    port: int = Field(default=6379, ge=1, le=65535)
    username: str | None = Field(default=None, max_length=255)
    password: SecretStr | None = Field(default=None, description="Never echoed back")
    tls: bool = False


class CaptureParams(Scoped):
    duration_ms: int = Field(
        default=10_000, ge=1000, le=300_000, description="How long to capture, ms"
    )


class CaptureId(Scoped):
    capture_id: int = Field(ge=1, description="The capture's id, as start_monitor returned")


def _body(params: NewConnection) -> dict[str, Any]:
    body: dict[str, Any] = {"name": params.name, "host": params.host, "port": params.port}
    body["tls"] = params.tls
    if params.username:
        body["username"] = params.username
    if params.password is not None:
        body["password"] = params.password.get_secret_value()
    return body


async def add_connection(api: ApiCaller, params: NewConnection) -> str:
    created = await api.send("POST", "/api/connections", body=_body(params))
    engine = created.get("engine") or {}
    return (
        f"Added {created.get('name')} (id {created.get('id')}):"
        f" {engine.get('type')} {data(engine.get('version'))}, {engine.get('status')}"
    )


# What the server answered: its version and its own error text (WRONGPASS ...).
_SERVER_SAID = frozenset({"version", "error"})


async def test_connection(api: ApiCaller, params: NewConnection) -> str:
    result = await api.send("POST", "/api/connections/test", body=_body(params))
    fields = ", ".join(
        f"{k}={data(v) if k in _SERVER_SAID else v}"
        for k, v in (result or {}).items()
        if not isinstance(v, dict | list)
    )
    return f"Test of {params.host}:{params.port}: {fields}"


async def remove_connection(api: ApiCaller, params: Scoped) -> str:
    if not params.connection:
        return "Name the connection to remove (connection: its name or id)."
    entry = await _find(api, params.connection)
    if entry is None:
        return f"No connection is named or numbered {params.connection!r}."
    await api.send("DELETE", f"/api/connections/{entry['id']}")
    return f"Removed {entry['name']} (id {entry['id']})."


async def set_default_connection(api: ApiCaller, params: Scoped) -> str:
    if not params.connection:
        return "Name the connection to make the default (connection: its name or id)."
    entry = await _find(api, params.connection)
    if entry is None:
        return f"No connection is named or numbered {params.connection!r}."
    await api.send("POST", f"/api/connections/{entry['id']}/default")
    return f"{entry['name']} (id {entry['id']}) is now the default connection."


async def _find(api: ApiCaller, name_or_id: str) -> dict[str, Any] | None:
    listed: list[dict[str, Any]] = await api.get("/api/connections")
    return next((c for c in listed if name_or_id in (c.get("id"), c.get("name"))), None)


async def start_monitor(api: ApiCaller, params: CaptureParams) -> str:
    started = await api.send(
        "POST",
        "/api/monitor/sessions",
        connection=params.connection,
        body={"durationMs": params.duration_ms},
    )
    return (
        f"MONITOR capture #{started.get('id')} {started.get('status')} since"
        f" {iso(started.get('startedAt'))} for {started.get('durationMs')} ms"
        f" (at most {started.get('maxLines')} lines)"
    )


async def stop_monitor(api: ApiCaller, params: CaptureId) -> str:
    stopped = await api.send(
        "POST", f"/api/monitor/sessions/{params.capture_id}/stop", connection=params.connection
    )
    return (
        f"MONITOR capture #{params.capture_id} {stopped.get('status')}:"
        f" {stopped.get('lineCount')} lines, {stopped.get('byteCount')} bytes"
    )


TOOLS = [
    ToolSpec(
        "add_connection",
        "Add a connection to monitor. Admin only.",
        add_connection,
        NewConnection,
        admin=True,
    ),
    ToolSpec(
        "test_connection",
        "Try to reach an instance without saving it. Admin only.",
        test_connection,
        NewConnection,
        admin=True,
    ),
    ToolSpec(
        "remove_connection",
        "Stop monitoring a connection and delete it (name or id). Admin only.",
        remove_connection,
        admin=True,
    ),
    ToolSpec(
        "set_default_connection",
        "Make a connection (name or id) the default one, which tools and the UI use when "
        "none is named. Admin only.",
        set_default_connection,
        admin=True,
    ),
    ToolSpec(
        "start_monitor",
        "Start a bounded MONITOR capture on a connection (it costs the server CPU). Admin only.",
        start_monitor,
        CaptureParams,
        admin=True,
    ),
    ToolSpec(
        "stop_monitor",
        "Stop a running MONITOR capture. Admin only.",
        stop_monitor,
        CaptureId,
        admin=True,
    ),
]
