"""What /mcp runs once its first request arrives: the SDK's server, its session manager
(in a task of its own) and the in-process client of the app's own routes."""

import asyncio
from contextvars import ContextVar

import httpx2
from mcp.server.mcpserver import Context
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import ASGIApp, Receive, Scope, Send

from svc_monitor.mcp.api_caller import ApiCaller, RestCaller, ToolRefused
from svc_monitor.mcp.server import build_server

MCP_PATH = "/mcp"
# Any route a member may call; with user control off it answers anyone.
_PROBE = "/api/version"
# Whom the credentials name: with user control off no token names anyone.
_WHO = "/api/auth/me"
# The in-process client's base URL: never resolved, the transport is the app itself.
_INTERNAL = "http://svc-monitor.internal"


# What the REST API must see of the assistant's request to decide as it would have: its
# client address and the proxy headers (trusted or not by TRUST_PROXY, as for any request).
_FORWARDED = ("authorization", "x-forwarded-for", "x-forwarded-proto", "x-forwarded-host")
_CALLER: ContextVar[tuple[str, int]] = ContextVar("mcp_caller", default=("127.0.0.1", 0))


class _AsTheCaller(httpx2.ASGITransport):
    """The app's own routes, called as from the address of the tool call's request (the
    activity log records that address, not the loopback of an in-process call)."""

    @property
    def client(self) -> tuple[str, int]:
        return _CALLER.get()

    @client.setter
    def client(self, _: tuple[str, int]) -> None:
        """Set once by the base class; the address is per tool call."""


class LiveEndpoint:
    def __init__(self, app: ASGIApp) -> None:
        self._client = httpx2.AsyncClient(transport=_AsTheCaller(app=app), base_url=_INTERNAL)
        self._server = build_server(self._caller_for, _has_token)
        # Only used for its session manager: the route and its lifespan are ours.
        self._server.streamable_http_app(
            streamable_http_path=MCP_PATH,
            # Each request stands alone (its own Authorization, checked each time); no
            # session state to lose across replicas behind a load balancer.
            stateless_http=True,
            json_response=True,
            # The service answers on whatever host name it is deployed under; a page on
            # another site is refused by its Origin instead (mcp/http.py).
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Run the session manager in a task of its own: anyio's task group must be left
        by the task that entered it, and requests come and go in tasks of theirs."""
        started = asyncio.Event()

        async def run() -> None:
            async with self._server.session_manager.run():
                started.set()
                await self._stop.wait()

        self._task = asyncio.create_task(run(), name="mcp-sessions")
        waiting = asyncio.create_task(started.wait())
        await asyncio.wait({self._task, waiting}, return_when=asyncio.FIRST_COMPLETED)
        waiting.cancel()
        if self._task.done():
            self._task.result()  # why it could not start

    async def stop(self) -> None:
        self._stop.set()
        if self._task is not None:
            await self._task
        await self._client.aclose()

    async def refusal(
        self, headers: dict[str, str], address: tuple[str, int] | None
    ) -> ToolRefused | None:
        """The REST API's own answer to this request's credentials: None when it lets them in."""
        if address is not None:
            _CALLER.set(address)
        headers = {name: headers[name] for name in _FORWARDED if name in headers}
        try:
            await RestCaller(self._client, headers=headers).get(_PROBE)
        except ToolRefused as exc:
            return exc
        return None

    async def names_a_user(self, headers: dict[str, str]) -> bool:
        """Whether the request's Authorization is a user's token. With user control off
        there are no users: any header names nobody, and must not unlock admin tools."""
        forwarded = {name: headers[name] for name in _FORWARDED if name in headers}
        try:
            who = await RestCaller(self._client, headers=forwarded).get(_WHO)
        except ToolRefused:
            return False
        return isinstance(who, dict) and who.get("signedIn") is True

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._server.session_manager.handle_request(scope, receive, send)

    def _caller_for(self, ctx: Context, tool: str) -> ApiCaller:
        headers = ctx.headers or {}
        address = getattr(ctx.request_context.request, "client", None)
        if address is not None:
            _CALLER.set((address[0], address[1]))
        forwarded = {name: headers[name] for name in _FORWARDED if name in headers}
        return RestCaller(self._client, tool=tool, headers=forwarded)


def _has_token(ctx: Context) -> bool:
    return "authorization" in (ctx.headers or {})
