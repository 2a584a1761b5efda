"""ACL audit page: the stored ACL LOG history of the chosen connection.

Totals (entries, users, denials by reason) as `/api/audit/stats` serves them, the
latest failed authentications as `/api/audit/failed-auth`, and every stored entry,
filtered by user, reason and time window, 50 to a page, as `/api/audit/entries`:
the same AuditService calls. Usernames and client lines come from whoever talked to
the server, so they are shown only through autoescaping templates.
"""

from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Query
from fastapi.responses import HTMLResponse

from svc_monitor.audit.schemas import AuditEntry, AuditStats
from svc_monitor.connections.models import Connection
from svc_monitor.engine.capabilities import EngineIdentity, unavailable_reason
from svc_monitor.events import now_ms
from svc_monitor.web.dependencies import Ui, UiDep
from svc_monitor.web.links import custom_window, filter_query
from svc_monitor.web.live import pushed
from svc_monitor.web.pages import Page
from svc_monitor.web.sections import Section, load

PAGE = Page("audit", "/audit", "ACL audit", live_only=True)
router = APIRouter(include_in_schema=False)

PAGE_SIZE = 50
FAILED_AUTH_SHOWN = 10
REQUIREMENT = "ACL LOG needs Redis 6 or newer, or Valkey"
# The entries refresh as often as the audit poll stores them, but not more than every 2 s.
MIN_REFRESH_MS = 2_000
REASONS = ("auth", "command", "key", "channel")
WINDOWS = {
    "1h": ("Last hour", 3_600_000),
    "24h": ("Last 24 hours", 24 * 3_600_000),
    "7d": ("Last 7 days", 7 * 24 * 3_600_000),
    "30d": ("Last 30 days", 30 * 24 * 3_600_000),
}
# The store's username column is 256 characters wide, as the API's filter.
USERNAME_CHARS = 256


@dataclass(frozen=True, slots=True)
class Filters:
    username: str = ""
    reason: str = ""
    window: str = ""  # a WINDOWS key; "" is all of history
    # A custom window (epoch ms, the browser's From/To); it takes the place of `window`.
    start: int | None = None
    end: int | None = None
    page: int = 0

    @property
    def active(self) -> bool:
        return bool(self.username or self.reason or self.window or self.start is not None)

    def since(self) -> int | None:
        window = WINDOWS.get(self.window)
        return now_ms() - window[1] if window else self.start

    def query(self, **changes: object) -> str:
        """This query string with `changes`, empty values left out (for links)."""
        values = {
            "username": self.username,
            "reason": self.reason,
            "window": self.window,
            "from": "" if self.start is None else str(self.start),
            "to": "" if self.end is None else str(self.end),
            "page": str(self.page) if self.page else "",
        }
        return filter_query(values, changes)


@dataclass(frozen=True, slots=True)
class AuditView:
    filters: Filters
    requirement: Section[None] | None
    stats: Section[AuditStats]
    failed_auth: Section[list[AuditEntry]]
    entries: Section[list[AuditEntry]]
    has_more: bool


def parse_filters(
    username: str | None,
    reason: str | None,
    window: str | None,
    page: str | None,
    *,
    since: str | None = None,
    until: str | None = None,
) -> Filters:
    """The query as typed; anything unusable falls back to its default instead of a 422."""
    page_text = (page or "").strip()
    custom = custom_window(since, until)
    return Filters(
        username=(username or "")[:USERNAME_CHARS],
        reason=reason if reason in REASONS else "",
        window=window if window in WINDOWS and custom is None else "",
        start=custom[0] if custom else None,
        end=custom[1] if custom else None,
        page=int(page_text) if page_text.isdigit() and len(page_text) <= 9 else 0,
    )


def acl_log_requirement(identity: EngineIdentity | None) -> Section[None] | None:
    if identity is None or identity.capabilities.has_acl_log:
        return None  # unknown yet: the stored history is still worth showing
    if identity.capabilities.refusal("acl_log") is not None and identity.release() >= (
        6,
        0,
        0,
    ):
        # A server with ACL that refused it: renamed, disabled by the provider, or denied.
        return Section.unsupported(unavailable_reason(identity.capabilities, "acl_log"))
    return Section.unsupported(
        f"{REQUIREMENT}. This instance is {identity.type.capitalize()} {identity.version}, "
        "or it refuses ACL LOG to this user."
    )


async def read_audit(ui: Ui, connection: Connection, filters: Filters) -> AuditView:
    requirement = acl_log_requirement(ui.shell.identity)
    if requirement is not None:
        return AuditView(filters, requirement, Section(), Section(), Section(value=[]), False)
    audit = ui.features.audit
    since = filters.since()
    stats = await load(audit.stats(connection.id, since=since, until=None))
    failed = await load(
        audit.entries(
            connection.id,
            reason="auth",
            since=since,
            until=filters.end,
            limit=FAILED_AUTH_SHOWN,
            offset=0,
        )
    )
    # One row past the page says whether an older page exists.
    rows = await load(
        audit.entries(
            connection.id,
            username=filters.username or None,
            reason=filters.reason or None,
            since=since,
            until=filters.end,
            limit=PAGE_SIZE + 1,
            offset=filters.page * PAGE_SIZE,
        )
    )
    values = rows.value or []
    shown = Section(value=values[:PAGE_SIZE]) if rows.ok else rows
    return AuditView(filters, None, stats, failed, shown, len(values) > PAGE_SIZE)


def client_address(client_info: str) -> str | None:
    """`addr=` of the CLIENT LIST line the server logged with the entry."""
    for field in client_info.split():
        name, _, value = field.partition("=")
        if name == "addr":
            return value or None
    return None


Username = Annotated[str | None, Query()]
Reason = Annotated[str | None, Query()]
Window = Annotated[str | None, Query()]
PageNumber = Annotated[str | None, Query(alias="page")]
Since = Annotated[str | None, Query(alias="from")]
Until = Annotated[str | None, Query(alias="to")]


@router.get("/audit")
async def audit_page(
    ui: UiDep,
    username: Username = None,
    reason: Reason = None,
    window: Window = None,
    page: PageNumber = None,
    since: Since = None,
    until: Until = None,
) -> HTMLResponse:
    if pushed(ui.shell):
        return ui.page(PAGE, "audit/page.html")
    filters = parse_filters(username, reason, window, page, since=since, until=until)
    connection = ui.shell.connection
    view = None if connection is None else await read_audit(ui, connection, filters)
    return ui.page(PAGE, "audit/page.html", filters=filters, view=view, **await _lists(ui))


@router.get("/ui/audit/trail")
async def audit_trail(
    ui: UiDep,
    username: Username = None,
    reason: Reason = None,
    window: Window = None,
    page: PageNumber = None,
    since: Since = None,
    until: Until = None,
) -> HTMLResponse:
    """Totals and entries alone, which the first page refreshes as the poll stores more."""
    if pushed(ui.shell):
        return ui.fragment("shell/needs_live.html")
    filters = parse_filters(username, reason, window, page, since=since, until=until)
    connection = ui.shell.connection
    view = None if connection is None else await read_audit(ui, connection, filters)
    return ui.fragment("audit/trail.html", view=view, **await _lists(ui))


async def _lists(ui: Ui) -> dict[str, Any]:
    interval = (await ui.services.runtime_settings.current()).auditPollIntervalMs
    return {
        "reasons": REASONS,
        "windows": WINDOWS,
        "page_size": PAGE_SIZE,
        "client_address": client_address,
        "refresh_ms": max(MIN_REFRESH_MS, interval),
        "poll_ms": interval,
    }
