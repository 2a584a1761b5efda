"""The streamable-HTTP MCP endpoint inside the service, at /mcp.

The rule (docs/guides/mcp.md#who-may-do-what): on self-hosted installs a token is
optional (read tools work without one); with a token every call acts as its user and is
recorded under that name; tokens can be revoked. Without a token, then, read tools only,
and only where user control is off (WORKSPACE_DISABLED=true).

Authenticated like the REST API, by the same personal tokens (Bearer): before any MCP
session, the caller's Authorization is put to the REST API itself (a member's route), so
an invalid or revoked token, or none while user control is on, is refused with the REST
API's 401. Each tool call then runs its REST route in-process through the ASGI app with
the caller's Authorization forwarded: the role a route needs, the licence tier, the
answer and the activity log entry are the REST API's own.

The SDK loads on the first request to /mcp (mcp/endpoint.py): importing it and building
the tools took ~0.5 s, which an install nobody points an assistant at never pays.
"""

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Receive, Scope, Send

if TYPE_CHECKING:
    from svc_monitor.mcp.endpoint import LiveEndpoint

MCP_PATH = "/mcp"


class McpEndpoint:
    """The ASGI app routed at /mcp. `app` is the whole service, whose routes tools call."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app
        self._live: LiveEndpoint | None = None
        self._loading = asyncio.Lock()
        self._closed = False

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """For the app's lifespan: stops what the first request started."""
        try:
            yield
        finally:
            self._closed = True
            if self._live is not None:
                await self._live.stop()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        if not _same_origin(headers):
            await _refuse(send, 403, "Cross-origin request refused")
            return
        live = await self._started()
        if live is None:
            await _refuse(send, 503, "svc-monitor is stopping")
            return
        client = scope.get("client")
        refused = await live.refusal(headers, (client[0], client[1]) if client else None)
        if refused is not None:
            # Status 0: no HTTP answer at all (mcp/caller_protocol.py ServiceUnreachable).
            await _refuse(send, refused.status or 503, refused.message)
            return
        if "authorization" in headers and not await live.names_a_user(headers):
            # Let in, yet naming nobody (user control off): a caller without a token.
            scope = dict(scope)
            scope["headers"] = [(k, v) for k, v in scope["headers"] if k != b"authorization"]
        await live.handle(scope, receive, send)

    async def _started(self) -> "LiveEndpoint | None":
        async with self._loading:
            if self._live is None and not self._closed:
                from svc_monitor.mcp.endpoint import LiveEndpoint

                live = LiveEndpoint(self._app)
                await live.start()
                self._live = live
            return self._live


def _same_origin(headers: dict[str, str]) -> bool:
    """A browser names its page's origin; a desktop assistant or a script sends none."""
    origin = headers.get("origin")
    return origin is None or urlsplit(origin).netloc == headers.get("host")


async def _refuse(send: Send, status: int, message: str) -> None:
    body = json.dumps({"statusCode": status, "message": message}).encode()
    response_headers = [(b"content-type", b"application/json")]
    if status == 401:
        response_headers.append((b"www-authenticate", b'Bearer realm="svc-monitor"'))
    await send({"type": "http.response.start", "status": status, "headers": response_headers})
    await send({"type": "http.response.body", "body": body})
