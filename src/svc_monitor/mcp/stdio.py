"""`svc-monitor mcp`: the MCP server over stdio, for desktop assistants.

It talks over HTTP to a running svc-monitor at SVC_URL with SVC_TOKEN as the Bearer
token, so the service's own access rules, licence gates and activity log apply.
"""

import httpx2

from svc_monitor.mcp.api_caller import ApiCaller, RestCaller, ToolRefused
from svc_monitor.mcp.server import build_server

DEFAULT_URL = "http://127.0.0.1:3001"
# A tool call is one or a few REST reads; a live engine read is bounded by the service's
# own command timeout, well under this.
TIMEOUT_S = 30.0


async def serve_stdio(url: str, token: str | None) -> None:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx2.AsyncClient(base_url=url.rstrip("/"), timeout=TIMEOUT_S) as client:

        def caller_for(_: object, tool: str) -> ApiCaller:
            return RestCaller(client, tool=tool, headers=headers)

        counts = token is not None and await _names_a_user(RestCaller(client, headers=headers))
        await build_server(caller_for, lambda _: counts).run_stdio_async()


async def _names_a_user(api: RestCaller) -> bool:
    """Whether SVC_TOKEN is a user's token. With user control off there are no users, so
    a token names nobody and must not unlock admin tools. A service not answering yet
    (ServiceUnreachable, status 0) leaves the token counted: each call is then decided by
    the REST API itself."""
    try:
        who = await api.get("/api/auth/me")
    except ToolRefused as exc:
        return exc.status != 404
    return not isinstance(who, dict) or who.get("signedIn") is not False
