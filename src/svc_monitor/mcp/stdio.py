"""`svc-monitor mcp`: the MCP server over stdio, for desktop assistants.

It talks over HTTP to a running svc-monitor at SVC_URL with SVC_TOKEN as the Bearer
token, so the service's own access rules, licence gates and activity log apply.
"""

import httpx2

from svc_monitor.mcp.api_caller import ApiCaller, RestCaller
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

        await build_server(caller_for, lambda _: token is not None).run_stdio_async()
