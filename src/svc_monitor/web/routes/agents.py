"""Agents: each agent connection's link (up or not, the agent's version, what it found of
its instance, the heartbeat's round trip, the commands it refused), and for admins the
tokens that link them: made (shown once, with the command that starts the agent) and
revoked (docs/features/agent.md).

Seeing the links is for members; making and revoking tokens is an admin's, as the API's
routes are.
"""

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from svc_monitor.agent_links.schemas import AgentLinkRead, AgentTokenCreate
from svc_monitor.agent_links.service import AgentLinkService
from svc_monitor.auth.dependencies.origin import reached_base
from svc_monitor.errors import AppError
from svc_monitor.web.dependencies import FromThisPage, Ui, UiDep
from svc_monitor.web.forms import parse_form
from svc_monitor.web.pages import Page

PAGE = Page("agents", "/agents", "Agents", needs_connection=False)
router = APIRouter(include_in_schema=False)


def _service(ui: Ui) -> AgentLinkService:
    service: AgentLinkService = ui.request.app.state.registry.get(AgentLinkService)
    return service


async def _context(
    ui: Ui, *, secret: str | None = None, message: str | None = None, error: str | None = None
) -> dict[str, Any]:
    links = [AgentLinkRead.of(view) for view in await _service(ui).views()]
    return {
        "links": links,
        "secret": secret,
        "message": message,
        "error": error,
        # The agent dials the address this browser used (or AUTH_PUBLIC_URL when set).
        "service_url": reached_base(ui.request, ui.services.settings),
    }


@router.get("/agents")
async def agents_page(ui: UiDep) -> HTMLResponse:
    return ui.page(PAGE, "agents/page.html", **await _context(ui))


async def _panel(ui: Ui, **outcome: Any) -> HTMLResponse:
    return ui.fragment("agents/links.html", **await _context(ui, **outcome))


@router.post("/ui/agents", dependencies=[FromThisPage])
async def create_token(request: Request, ui: UiDep) -> HTMLResponse:
    name = parse_form(await request.body()).get("name", "")
    try:
        body = AgentTokenCreate(name=name)
    except ValueError:
        return await _panel(ui, error="name: give the agent's connection a name (1-100 characters)")
    try:
        token, secret = await _service(ui).create(body.name)
    except AppError as exc:
        return await _panel(ui, error=exc.message)
    return await _panel(ui, secret=secret, message=f"Agent connection {token.name} made.")


@router.post("/ui/agents/{token_id}/revoke", dependencies=[FromThisPage])
async def revoke_token(token_id: str, ui: UiDep) -> HTMLResponse:
    try:
        token = await _service(ui).revoke(token_id)
    except AppError as exc:
        return await _panel(ui, error=exc.message)
    return await _panel(ui, message=f"Token of {token.name} revoked: its link closed.")
