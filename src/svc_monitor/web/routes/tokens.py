"""Settings, API and MCP tokens: your personal tokens, made and revoked, and the client
configuration an MCP assistant needs to use one.

A token acts as you on every API route (`Authorization: Bearer <token>`) and over MCP
(`SVC_TOKEN` for the stdio command, the same Bearer header on `/mcp`), with your role at
the time of each call. Its secret is shown once, in the answer that makes it; only a
hash is kept, so the client snippets carry it only in that answer and a placeholder
otherwise. Everyone signed in makes and revokes their own, members too (the one change
a member makes: without a token an MCP client has nothing to act with); a member's
token acts as a member. The service lists and revokes only the caller's own tokens.
"""

import json
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from svc_monitor.auth.dependencies.origin import reached_base
from svc_monitor.errors import AppError
from svc_monitor.web.dependencies import FromThisPage, Ui, UiDep
from svc_monitor.web.forms import parse_form

router = APIRouter(include_in_schema=False)

# What the snippets hold when no secret is at hand: an existing token's is not kept.
TOKEN_PLACEHOLDER = "<your token>"
# The server's name in the client's `mcpServers` map: the tools show up under it.
MCP_SERVER_NAME = "svc-monitor"


def mcp_snippets(service_url: str, token: str | None) -> dict[str, str]:
    """The `mcpServers` entries to paste into an MCP client: `stdio` runs the
    `svc-monitor mcp` command on the client's machine, `http` talks to `/mcp` here."""
    secret = token or TOKEN_PLACEHOLDER
    stdio = {
        "command": "svc-monitor",
        "args": ["mcp"],
        "env": {"SVC_URL": service_url, "SVC_TOKEN": secret},
    }
    http = {
        "type": "http",
        "url": f"{service_url}/mcp",
        "headers": {"Authorization": f"Bearer {secret}"},
    }
    return {
        kind: json.dumps({"mcpServers": {MCP_SERVER_NAME: entry}}, indent=2)
        for kind, entry in (("stdio", stdio), ("http", http))
    }


async def tokens_context(
    ui: Ui, *, secret: str | None = None, message: str | None = None, error: str | None = None
) -> dict[str, Any]:
    principal = ui.viewer.principal
    tokens = await ui.services.auth.tokens(principal) if principal is not None else []
    # Whoever reads this page pastes the snippet into an assistant on their own machine,
    # which reaches us the way their browser just did (or by AUTH_PUBLIC_URL when set).
    # `public_base` would swap an address this browser used, such as an IP, for the host's
    # own name, which that machine may not resolve; its guard against a forged Host header
    # is for links handed to someone else, and this one is shown only to the asker.
    service_url = reached_base(ui.request, ui.services.settings)
    return {
        "tokens": tokens,
        "token_secret": secret,
        "token_message": message,
        "token_error": error,
        "mcp_snippets": mcp_snippets(service_url, secret),
    }


async def _panel(ui: Ui, **outcome: Any) -> HTMLResponse:
    return ui.fragment("settings/tokens.html", **await tokens_context(ui, **outcome))


@router.post("/ui/tokens", dependencies=[FromThisPage])
async def create_token(request: Request, ui: UiDep) -> HTMLResponse:
    principal = ui.viewer.principal
    if principal is None:
        return await _panel(ui, error="API tokens exist only with user control on.")
    name = parse_form(await request.body()).get("name", "")
    try:
        token, secret = await ui.services.auth.create_token(principal, name)
    except AppError as exc:
        return await _panel(ui, error=exc.message)
    return await _panel(ui, secret=secret, message=f"Token {token.name} created.")


@router.post("/ui/tokens/{token_id}/revoke", dependencies=[FromThisPage])
async def revoke_token(token_id: str, ui: UiDep) -> HTMLResponse:
    principal = ui.viewer.principal
    if principal is None:
        return await _panel(ui, error="API tokens exist only with user control on.")
    try:
        await ui.services.auth.revoke_token(principal, token_id)
    except AppError as exc:
        return await _panel(ui, error=exc.message)
    return await _panel(ui, message="Token revoked: it stops working at once.")
