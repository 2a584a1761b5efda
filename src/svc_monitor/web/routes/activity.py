"""Activity page (admins and the owner): who changed what, signed in or out, or ran a
CLI command, newest first, filtered by person, action and time window, 50 to a page.

The same ActivityLog.page call as `GET /api/workspace/activity`. Names, routes and
details come from users and their requests, so they reach the page only through
autoescaping templates (a name with `<script>` or CR/LF shows as text).
"""

from dataclasses import dataclass
from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import RedirectResponse, Response

from svc_monitor.auth.models import ActivityEntry
from svc_monitor.events import now_ms
from svc_monitor.web.dependencies import UiDep
from svc_monitor.web.links import filter_query
from svc_monitor.web.pages import Page

PAGE = Page("activity", "/activity", "Activity", needs_connection=False, audience="admins")
router = APIRouter(include_in_schema=False)

PAGE_SIZE = 50
WINDOWS = {
    "1h": ("Last hour", 3_600_000),
    "24h": ("Last 24 hours", 24 * 3_600_000),
    "7d": ("Last 7 days", 7 * 24 * 3_600_000),
    "30d": ("Last 30 days", 30 * 24 * 3_600_000),
}
# Suggestions for the action filter; any exact action string works.
COMMON_ACTIONS = ("auth.login", "auth.logout", "cli.command")


@dataclass(frozen=True, slots=True)
class Filters:
    actor: str = ""
    action: str = ""
    window: str = ""
    cursor: str = ""

    @property
    def active(self) -> bool:
        return bool(self.actor or self.action or self.window)

    def query(self, **changes: object) -> str:
        values = {
            "actor": self.actor,
            "action": self.action,
            "window": self.window,
            "cursor": self.cursor,
        }
        return filter_query(values, changes)


@router.get("/activity")
async def activity_page(
    ui: UiDep,
    actor: Annotated[str, Query(max_length=200)] = "",
    action: Annotated[str, Query(max_length=200)] = "",
    window: Annotated[str, Query(max_length=8)] = "",
    cursor: Annotated[str, Query(max_length=20)] = "",
) -> Response:
    if not ui.viewer.workspace:
        return RedirectResponse("/", status_code=303)
    filters = Filters(actor.strip(), action.strip(), window if window in WINDOWS else "", cursor)
    span = WINDOWS.get(filters.window)
    entries, next_cursor = await ui.services.auth.activity.page(
        actor=filters.actor or None,
        action=filters.action or None,
        since=now_ms() - span[1] if span else None,
        cursor=int(cursor) if cursor.isdigit() else None,
        limit=PAGE_SIZE,
    )
    return ui.page(
        PAGE,
        "activity/page.html",
        filters=filters,
        entries=[Row.of(e) for e in entries],
        next_cursor=next_cursor,
        windows=WINDOWS,
        actions=COMMON_ACTIONS,
    )


@dataclass(frozen=True, slots=True)
class Row:
    entry: ActivityEntry
    summary: str  # the details a person reads first

    @classmethod
    def of(cls, entry: ActivityEntry) -> "Row":
        details = entry.details
        if entry.action == "cli.command":
            args = details.get("args")
            shown = " ".join(str(a) for a in args) if isinstance(args, list) else ""
            count = details.get("argCount", "")
            summary = f"{details.get('command', '')} {shown}".strip()
            if not shown and count:
                summary += f" ({count} arguments, values not recorded)"
        elif entry.action == "auth.login":
            summary = f"via {details.get('method', 'password')}"
        else:
            summary = ", ".join(f"{k}: {v}" for k, v in sorted(details.items()))
        return cls(entry, summary)
