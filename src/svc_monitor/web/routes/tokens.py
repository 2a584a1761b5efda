"""Settings, API tokens: your personal tokens (the spec's MCP tokens), made and revoked.

A token acts as you on every API route (`Authorization: Bearer <token>`), with your role
at the time of each call. Its secret is shown once, in the answer that makes it; only a
hash is kept. Making and revoking are changes, so they need an admin (the spec's rule 1);
members see the section and why it is closed to them.
"""

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from svc_monitor.errors import AppError
from svc_monitor.web.dependencies import FromThisPage, Ui, UiDep
from svc_monitor.web.forms import parse_form

router = APIRouter(include_in_schema=False)


async def tokens_context(
    ui: Ui, *, secret: str | None = None, message: str | None = None, error: str | None = None
) -> dict[str, Any]:
    principal = ui.viewer.principal
    tokens = await ui.services.auth.tokens(principal) if principal is not None else []
    return {
        "tokens": tokens,
        "token_secret": secret,
        "token_message": message,
        "token_error": error,
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
