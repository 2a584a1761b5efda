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
from svc_monitor.web.links import custom_window, filter_query
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
    # A custom window (epoch ms, the browser's From/To); it takes the place of `window`.
    start: int | None = None
    end: int | None = None

    @property
    def active(self) -> bool:
        return bool(self.actor or self.action or self.window or self.start is not None)

    def query(self, **changes: object) -> str:
        values = {
            "actor": self.actor,
            "action": self.action,
            "window": self.window,
            "from": "" if self.start is None else str(self.start),
            "to": "" if self.end is None else str(self.end),
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
    since: Annotated[str, Query(alias="from", max_length=20)] = "",
    until: Annotated[str, Query(alias="to", max_length=20)] = "",
) -> Response:
    if not ui.viewer.workspace:
        return RedirectResponse("/", status_code=303)
    custom = custom_window(since, until)
    filters = Filters(
        actor.strip(),
        action.strip(),
        window if window in WINDOWS and custom is None else "",
        cursor,
        start=custom[0] if custom else None,
        end=custom[1] if custom else None,
    )
    span = WINDOWS.get(filters.window)
    entries, next_cursor = await ui.services.auth.activity.page(
        actor=filters.actor or None,
        action=filters.action or None,
        since=now_ms() - span[1] if span else filters.start,
        until=filters.end,
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
