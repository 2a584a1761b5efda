"""The browser CLI's WebSocket: JSON frames in and out, the logic in service.py."""

import json
from collections.abc import Mapping
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, WebSocket, WebSocketDisconnect, WebSocketException
from starlette.requests import HTTPConnection

from svc_monitor.auth.dependencies.access import principal_of, source_ip_of
from svc_monitor.console.cli.models import CommandRefused, CommandResult, SessionClosed
from svc_monitor.console.cli.service import CliService, CliSession

router = APIRouter(tags=["cli"])

# A close frame's reason is at most 123 bytes (RFC 6455); ours are shorter than this.
_REASON_CHARS = 100


def get_cli(connection: HTTPConnection) -> CliService:
    features = getattr(connection.app.state, "features", None)
    if features is None:  # refused before the handshake completes; the page retries
        raise WebSocketException(code=1013, reason="svc-monitor is still starting")
    cli: CliService = features.cli
    return cli


CliDep = Annotated[CliService, Depends(get_cli)]


@router.websocket("/cli/ws")
async def cli_socket(
    websocket: WebSocket,
    cli: CliDep,
    connection_id: Annotated[str | None, Query(alias="connectionId", max_length=64)] = None,
) -> None:
    """The browser CLI: run redis-cli style commands on one connection.

    Open with `?connectionId=<id>` (else the default connection) from a signed-in
    session, with the Origin of this service; any member may connect. Then, as JSON text
    frames, one reply per command, in order:

    - client: `{"type": "execute", "command": "GET foo"}`
    - server: `{"type": "result", "result": "\\"bar\\"", "resultType": "string",
      "durationMs": 0.4, "truncated": false}`; `resultType` is string, integer, array,
      nil, error (an error reply: `(error) ERR ...`), empty-array or status
    - server: `{"type": "error", "error": "CONFIG is not allowed for members: ..."}` when
      nothing ran: refused by the role's command policy, a parse error, the rate limit
      (50 commands/s), or no reply from the server (timeout, unreachable).

    Members run read commands only, whatever SVC_UNSAFE_CLI says; admins and the owner
    run write and admin commands too when SVC_UNSAFE_CLI=true. Commands that would block
    or take over the connection (MONITOR, SUBSCRIBE, BLPOP, WAIT, SELECT, MULTI,
    SHUTDOWN ...) are refused for everyone. Replies are cut at 512 KiB with a note.

    The server closes the socket with 1008 when the session ends (signed out, removed)
    or the user already has 10 CLI sockets open, 4404 for an unknown `connectionId`,
    4409 when the connection's stored password cannot be decrypted or it is an OTLP push
    connection (which is sent no commands), and 1009 for a frame
    over 1 MiB. Every command that ran is in the activity log (`cli.command`); refused
    ones are not.
    """
    # `authorize` has refused a foreign Origin before the handshake (cross-site WebSocket
    # hijacking), with user control on or off.
    auth = websocket.app.state.services.auth
    await websocket.accept()
    try:
        async with cli.session(
            connection_id,
            principal=principal_of(websocket),
            cookie=websocket.cookies.get(auth.cookies.name),
            authorization=websocket.headers.get("authorization"),
            source_ip=source_ip_of(websocket),
        ) as session:
            await _serve(websocket, session)
    except SessionClosed as closed:
        await _close(websocket, closed)
    except WebSocketDisconnect:
        return


async def _serve(websocket: WebSocket, session: CliSession) -> None:
    while True:
        message = await websocket.receive()
        if message["type"] == "websocket.disconnect":
            return
        command, problem = _command_of(message)
        if command is None:
            await websocket.send_json({"type": "error", "error": problem})
            continue
        outcome = await session.run(command)
        await websocket.send_json(_frame(outcome))


def _command_of(message: Mapping[str, Any]) -> tuple[str | None, str]:
    text = message.get("text")
    if text is None:
        return None, "Send JSON text frames, not binary ones"
    try:
        frame = json.loads(text)
    except (ValueError, RecursionError):  # nested past the parser's depth: not a command
        return None, 'Not JSON: send {"type": "execute", "command": "PING"}'
    if not isinstance(frame, dict) or frame.get("type") != "execute":
        return None, 'Unknown frame: send {"type": "execute", "command": "PING"}'
    command = frame.get("command")
    if not isinstance(command, str):
        return None, '"command" must be a string, such as "GET foo"'
    return command, ""


def _frame(outcome: CommandResult | CommandRefused) -> dict[str, Any]:
    if isinstance(outcome, CommandResult):
        return {
            "type": "result",
            "result": outcome.text,
            "resultType": outcome.result_type,
            "durationMs": outcome.duration_ms,
            "truncated": outcome.truncated,
        }
    return {"type": "error", "error": outcome.message}


async def _close(websocket: WebSocket, closed: SessionClosed) -> None:
    try:
        await websocket.send_json({"type": "error", "error": closed.message})
        reason = closed.message[:_REASON_CHARS].encode()[:_REASON_CHARS].decode(errors="ignore")
        await websocket.close(code=closed.code, reason=reason)
    except (WebSocketDisconnect, RuntimeError):
        return  # the browser went away first
