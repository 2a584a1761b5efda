"""MONITOR capture routes (under /api) and the live tail's WebSocket."""

import asyncio
import contextlib
import json
import time
from collections.abc import Iterator
from typing import Annotated, Any, Literal

from fastapi import (
    APIRouter,
    Body,
    Path,
    Query,
    Request,
    Response,
    WebSocket,
    WebSocketDisconnect,
    WebSocketException,
    status,
)
from fastapi.responses import StreamingResponse

from svc_monitor.api.error_responses import error_responses
from svc_monitor.api.params import MAX_COUNT
from svc_monitor.auth.dependencies.access import principal_of
from svc_monitor.auth.dependencies.origin import same_origin
from svc_monitor.auth.service import AuthService
from svc_monitor.connections.dependencies import LiveConnection, SelectedConnection
from svc_monitor.console.monitor.dependencies import CaptureConnection, MonitorDep
from svc_monitor.console.monitor.export import csv_chunks, filename, json_chunks
from svc_monitor.console.monitor.models import Caps, CaptureSession
from svc_monitor.console.monitor.schemas import (
    CaptureRead,
    CaptureRequest,
    MonitorLineRead,
    PreflightRead,
    capture_dict,
    line_dict,
    preflight_read,
)
from svc_monitor.console.monitor.service import MonitorService
from svc_monitor.console.monitor.tail import Ended, Missed, TailItem
from svc_monitor.errors import AppError
from svc_monitor.kit.plain_text import Printable
from svc_monitor.services import Services

router = APIRouter(tags=["monitor"])

SessionId = Annotated[int, Path(ge=1, le=2**31 - 1, description="the capture's id")]
Settings = Annotated[CaptureRequest | None, Body()]
ListLimit = Annotated[int, Query(ge=1, le=100, description="at most this many captures")]
ListOffset = Annotated[int, Query(ge=0, le=1_000_000, description="captures to skip")]
LineOffset = Annotated[int, Query(ge=0, le=MAX_COUNT, description="the first line's seq")]
LineLimit = Annotated[int, Query(ge=1, le=5000, description="at most this many lines")]
# Printable: a NUL would reach the stored lines' query (PostgreSQL refuses it outright).
CommandFilter = Annotated[
    Printable | None, Query(max_length=64, description="only this command (case-insensitive)")
]
ExportFormat = Annotated[Literal["json", "csv"], Query(description="json or csv")]

# A live tail's frames stay well under a browser's comfort (and the 1 MiB we accept).
_FRAME_CHARS = 256 * 1024
# A tail re-checks its viewer's session this often; a signed-out viewer is cut off.
_RECHECK_S = 30.0
_NOT_FOUND_CLOSE = 4404
_BUSY_CLOSE = 1013


def _caps(monitor: MonitorService, body: CaptureRequest | None) -> Caps:
    body = body or CaptureRequest()
    return monitor.caps(
        duration_ms=body.durationMs, max_lines=body.maxLines, max_bytes=body.maxBytes
    )


@router.post(
    "/monitor/sessions/preflight",
    response_model=PreflightRead,
    responses=error_responses(404, 409, 422),
)
async def preflight_capture(
    connection: LiveConnection, monitor: MonitorDep, body: Settings = None
) -> PreflightRead:
    """What starting a capture on this connection would do, without starting one: whether
    the engine lets this connection's user run MONITOR (tried on a separate connection
    that hangs up at once; a refusal is remembered for 30 s and explained), the current
    commands per second and an estimate of lines and bytes over the duration, the caps
    that will apply, and the capture already running here, if any. Changes nothing, so
    members may call it."""
    return preflight_read(await monitor.preflight(connection, _caps(monitor, body)))


@router.post(
    "/monitor/sessions",
    status_code=status.HTTP_201_CREATED,
    response_model=CaptureRead,
    responses=error_responses(404, 409, 422, 501, 503),
)
async def start_capture(
    request: Request, connection: LiveConnection, monitor: MonitorDep, body: Settings = None
) -> dict[str, Any]:
    """Start a MONITOR capture on this connection, on a connection of its own.

    It ends by itself after `durationMs` (default 30 s, at most 5 min), or as truncated
    at `maxLines` (default 10,000, at most 100,000) or `maxBytes` of MONITOR output
    (default 8 MiB, at most 32 MiB), or when stopped. With MONITOR_REDACT_VALUES=true
    only command and key names are kept. 409 while a capture runs on this connection,
    or when the engine refuses MONITOR for this connection's user (the message says
    why); 501 when detection found MONITOR missing (renamed away, or disabled by a managed
    provider); 503 when the engine does not answer."""
    principal = principal_of(request)
    session = await monitor.start(
        connection,
        _caps(monitor, body),
        requested_by=principal.name if principal is not None else None,
    )
    return capture_dict(session)


@router.get("/monitor/sessions", response_model=list[CaptureRead], responses=error_responses(404))
async def list_captures(
    connection: SelectedConnection,
    monitor: MonitorDep,
    limit: ListLimit = 20,
    offset: ListOffset = 0,
) -> list[dict[str, Any]]:
    """This connection's captures, newest first, running ones with their live counts."""
    sessions = await monitor.list_captures(connection, limit=limit, offset=offset)
    return [capture_dict(s) for s in sessions]


@router.get(
    "/monitor/sessions/{session_id}",
    response_model=CaptureRead,
    responses=error_responses(404, 422),
)
async def get_capture(
    session_id: SessionId, monitor: MonitorDep, x_connection_id: CaptureConnection = None
) -> dict[str, Any]:
    """One capture. Found by its id alone; with `X-Connection-Id`, only on that connection."""
    return capture_dict(await monitor.get(session_id, connection_id=x_connection_id))


@router.get(
    "/monitor/sessions/{session_id}/lines",
    response_model=list[MonitorLineRead],
    responses=error_responses(404, 422),
)
async def list_capture_lines(
    session_id: SessionId,
    monitor: MonitorDep,
    x_connection_id: CaptureConnection = None,
    offset: LineOffset = 0,
    limit: LineLimit = 500,
    command: CommandFilter = None,
) -> list[dict[str, Any]]:
    """Stored lines of a capture in order, from the line numbered `offset` on. A running
    capture's lines are stored in batches, at most half a second behind."""
    session = await monitor.get(session_id, connection_id=x_connection_id)
    lines = await monitor.lines(session, offset=offset, limit=limit, command=command)
    return [line_dict(line) for line in lines]


@router.get(
    "/monitor/sessions/{session_id}/export",
    response_class=StreamingResponse,
    responses={
        200: {
            "description": "the capture as an attachment",
            "content": {"application/json": {}, "text/csv": {}},
        },
        **error_responses(404, 422),
    },
)
async def export_capture(
    session_id: SessionId,
    monitor: MonitorDep,
    x_connection_id: CaptureConnection = None,
    format: ExportFormat = "json",
) -> StreamingResponse:
    """Download a capture's stored lines: `json` is `{"session": {...}, "lines": [...]}`,
    `csv` a header row and one row per line (`args` as a JSON list), both streamed."""
    session = await monitor.get(session_id, connection_id=x_connection_id)
    pages = monitor.export_pages(session)
    headers = {"Content-Disposition": f'attachment; filename="{filename(session, format)}"'}
    if format == "csv":
        return StreamingResponse(
            csv_chunks(pages), media_type="text/csv; charset=utf-8", headers=headers
        )
    return StreamingResponse(
        json_chunks(session, pages), media_type="application/json", headers=headers
    )


@router.post(
    "/monitor/sessions/{session_id}/stop",
    response_model=CaptureRead,
    responses=error_responses(404, 409, 422),
)
async def stop_capture(
    request: Request,
    session_id: SessionId,
    monitor: MonitorDep,
    x_connection_id: CaptureConnection = None,
) -> dict[str, Any]:
    """End a running capture now ("stopped by <user>"); its MONITOR connection closes. 409
    when it is not running."""
    await monitor.get(session_id, connection_id=x_connection_id)
    principal = principal_of(request)
    session = await monitor.stop(session_id, by=principal.name if principal else None)
    return capture_dict(session)


@router.delete(
    "/monitor/sessions/{session_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    responses=error_responses(404, 409, 422),
)
async def delete_capture(
    session_id: SessionId, monitor: MonitorDep, x_connection_id: CaptureConnection = None
) -> Response:
    """Delete a capture that has ended, and its lines; 409 while it runs."""
    await monitor.delete(session_id, connection_id=x_connection_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.websocket("/monitor/ws")
async def tail_capture(
    websocket: WebSocket,
    monitor: MonitorDep,
    session_id: Annotated[int, Query(alias="sessionId", ge=1, le=2**31 - 1)],
) -> None:
    """Follow a capture live: open `/api/monitor/ws?sessionId=<id>` from a signed-in session
    with the Origin of this service (any member may). The server sends JSON text frames:

    - `{"type": "session", "session": {...}}` first, the capture as it is now;
    - `{"type": "lines", "lines": [{...}, ...]}`: the newest 1,000 lines captured before
      you came, then each new line as it arrives (several per frame when they come fast);
    - `{"type": "missed", "count": n, "reason": "backlog" | "overflow"}`: lines you were
      not sent, older than the backlog or dropped while you were too slow to keep up (the
      capture stores them all the same: read them from `.../lines`);
    - `{"type": "status", "status": "ended", "session": {...}}` when the capture ends
      (its final status and reason in `session`), after which the server closes;
    - `{"type": "error", "error": "..."}` before closing with 4404 (no such capture),
      1013 (too many viewers of one capture) or 1008 (your session ended).

    Nothing needs to be sent; whatever is sent is ignored."""
    services: Services = websocket.app.state.services
    auth = services.auth
    if not auth.enabled and not same_origin(websocket, auth.settings):
        # With user control on `authorize` checked the origin; off, another site's page must
        # still not read captures through a visitor's browser (cross-site WebSocket hijacking).
        raise WebSocketException(code=1008, reason="Cross-origin request refused")
    await websocket.accept()
    try:
        session = await monitor.get(session_id)
    except AppError as exc:
        await _close(websocket, exc.message, code=_NOT_FOUND_CLOSE)
        return
    pump = asyncio.create_task(_pump(websocket, monitor, session, auth))
    listen = asyncio.create_task(_listen(websocket))
    await asyncio.wait({pump, listen}, return_when=asyncio.FIRST_COMPLETED)
    for task in (pump, listen):
        task.cancel()
    await asyncio.gather(pump, listen, return_exceptions=True)


async def _pump(
    websocket: WebSocket, monitor: MonitorService, session: CaptureSession, auth: AuthService
) -> None:
    cookie = websocket.cookies.get(auth.cookies.name)
    authorization = websocket.headers.get("authorization")
    checked = time.monotonic()
    try:
        await websocket.send_text(json.dumps({"type": "session", "session": capture_dict(session)}))
        stream = monitor.tail(session)
        try:
            async for items in stream:
                for frame in _frames(items):
                    await websocket.send_text(frame)
                if auth.enabled and time.monotonic() - checked >= _RECHECK_S:
                    checked = time.monotonic()
                    identified = await auth.identify(cookie, authorization)
                    if identified.principal is None:
                        await _close(websocket, "Your session has ended: sign in again", code=1008)
                        return
        finally:
            await stream.aclose()
    except AppError as exc:  # too many viewers
        await _close(websocket, exc.message, code=_BUSY_CLOSE)
        return
    except (WebSocketDisconnect, RuntimeError, OSError):
        return  # the viewer went away
    with contextlib.suppress(WebSocketDisconnect, RuntimeError, OSError):
        await websocket.close(code=1000)


async def _listen(websocket: WebSocket) -> None:
    """Read (and ignore) what the viewer sends, to notice when it goes away."""
    while True:
        message = await websocket.receive()
        if message["type"] == "websocket.disconnect":
            return


def _frames(items: list[TailItem]) -> Iterator[str]:
    lines: list[str] = []
    size = 0
    for item in items:
        if isinstance(item, Missed | Ended) and lines:
            yield _lines_frame(lines)
            lines, size = [], 0
        if isinstance(item, Missed):
            yield json.dumps({"type": "missed", "count": item.count, "reason": item.reason})
        elif isinstance(item, Ended):
            session = capture_dict(item.session)
            yield json.dumps({"type": "status", "status": "ended", "session": session})
        else:
            text = json.dumps(line_dict(item))
            if lines and size + len(text) > _FRAME_CHARS:
                yield _lines_frame(lines)
                lines, size = [], 0
            lines.append(text)
            size += len(text) + 1
    if lines:
        yield _lines_frame(lines)


def _lines_frame(lines: list[str]) -> str:
    return '{"type":"lines","lines":[' + ",".join(lines) + "]}"


async def _close(websocket: WebSocket, message: str, *, code: int) -> None:
    with contextlib.suppress(WebSocketDisconnect, RuntimeError, OSError):
        await websocket.send_text(json.dumps({"type": "error", "error": message}))
        await websocket.close(
            code=code, reason=message[:100].encode()[:100].decode(errors="ignore")
        )
