"""CLI: a terminal on the chosen connection, talking to /api/cli/ws (console/cli/).

The page only draws the terminal and says what the viewer may run; static/cli.js opens
the socket and the server's command policy decides what runs.
"""

from typing import Literal

from fastapi import APIRouter
from fastapi.responses import HTMLResponse

from svc_monitor.console.cli.models import MAX_LINE_CHARS
from svc_monitor.web.dependencies import Ui, UiDep
from svc_monitor.web.live import pushed
from svc_monitor.web.pages import Page

PAGE = Page("cli", "/cli", "CLI", live_only=True)
router = APIRouter(include_in_schema=False)

Mode = Literal["member", "read-only", "unsafe"]


def cli_mode(ui: Ui) -> Mode:
    """What the viewer may run: reads only as a member; writes too as an admin (or with
    user control off) when SVC_UNSAFE_CLI=true."""
    if not ui.viewer.is_admin:
        return "member"
    return "unsafe" if ui.services.settings.SVC_UNSAFE_CLI else "read-only"


@router.get("/cli")
async def cli_page(ui: UiDep) -> HTMLResponse:
    """A redis-cli style terminal on the chosen connection."""
    if pushed(ui.shell):
        return ui.page(PAGE, "cli/page.html")
    return ui.page(PAGE, "cli/page.html", mode=cli_mode(ui), max_line=MAX_LINE_CHARS)
