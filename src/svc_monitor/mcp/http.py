"""The streamable-HTTP MCP endpoint inside the service, at /mcp.

Authenticated like the REST API, by the same personal tokens (Bearer): before any MCP
session, the caller's Authorization is put to the REST API itself (a member's route), so
an invalid or revoked token, or none while user control is on, is refused with the REST
API's 401. Each tool call then runs its REST route in-process through the ASGI app with
the caller's Authorization forwarded: the role a route needs, the licence tier, the
answer and the activity log entry are the REST API's own.
"""

import contextlib
import json
from collections.abc import AsyncIterator
from urllib.parse import urlsplit

import httpx2
from mcp.server.mcpserver import Context
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import ASGIApp, Receive, Scope, Send

from svc_monitor.mcp.api_caller import ApiCaller, RestCaller, ToolRefused
from svc_monitor.mcp.server import build_server

MCP_PATH = "/mcp"
# Any route a member may call; with user control off it answers anyone.
_PROBE = "/api/version"
# The in-process client's base URL: never resolved, the transport is the app itself.
_INTERNAL = "http://svc-monitor.internal"


class McpEndpoint:
    """The ASGI app mounted at /mcp. `app` is the whole service, which tools call."""

    def __init__(self, app: ASGIApp) -> None:
        self._client = httpx2.AsyncClient(
            transport=httpx2.ASGITransport(app=app), base_url=_INTERNAL
        )
        self._server = build_server(self._caller_for, _has_token)
        # Only used for its session manager: the route and its lifespan are ours.
        self._server.streamable_http_app(
            streamable_http_path=MCP_PATH,
            # Each request stands alone (its own Authorization, checked each time); no
            # session state to lose across replicas behind a load balancer.
            stateless_http=True,
            json_response=True,
            # The service answers on whatever host name it is deployed under; a page on
            # another site is refused below by its Origin instead.
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """The session manager's task group, for the app's lifespan."""
        async with self._server.session_manager.run():
            try:
                yield
            finally:
                await self._client.aclose()

    def _caller_for(self, ctx: Context, tool: str) -> ApiCaller:
        headers = ctx.headers or {}
        forwarded = (
            {"Authorization": headers["authorization"]} if "authorization" in headers else {}
        )
        return RestCaller(self._client, tool=tool, headers=forwarded)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        if not _same_origin(headers):
            await _refuse(send, 403, "Cross-origin request refused")
            return
        forwarded = (
            {"Authorization": headers["authorization"]} if "authorization" in headers else {}
        )
        try:
            await RestCaller(self._client, headers=forwarded).get(_PROBE)
        except ToolRefused as exc:
            await _refuse(send, exc.status, exc.message.partition(": ")[2] or exc.message)
            return
        await self._server.session_manager.handle_request(scope, receive, send)


def _has_token(ctx: Context) -> bool:
    return "authorization" in (ctx.headers or {})


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
