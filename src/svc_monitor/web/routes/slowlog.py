"""Slow log page: the stored SLOWLOG and COMMANDLOG history, filtered, and its patterns.

Three tabs, chosen by `?log=`: slow, large-request and large-reply. The slow tab reads
the stored SLOWLOG history on every engine, Valkey 8.1+ included, and there is no
fourth "COMMANDLOG slow" tab: since Valkey 8.1, SLOWLOG reads the very ring that
COMMANDLOG's slow type does (same entry ids; SLOWLOG RESET empties both), so a
fourth tab would list the same commands twice, while one source keeps the slow tab
the same on Redis, on older Valkey and across an upgrade. Large requests and large
replies exist only in COMMANDLOG: elsewhere their tabs show the requirement, and
while the engine has not answered yet (capabilities unknown) they say that instead
of asking the engine live on every view. Where detection found SLOWLOG itself missing
(renamed away, disabled by a managed provider, denied to the connection's user), the
slow tab says so in place of its history, since nothing is polled into it.

Every read is stored history through SlowlogService, the same calls that back
/api/slowlog-analytics/entries and /api/metrics/{slowlog,commandlog}/patterns:
100 rows a page, newest first. The first page refreshes itself, so new entries
appear without a reload; older pages hold still while they are read.
"""

from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Query
from fastapi.responses import HTMLResponse

from svc_monitor.connections.models import Connection
from svc_monitor.engine.capabilities import EngineIdentity, unavailable_reason
from svc_monitor.engine.slowlog import LogType
from svc_monitor.events import now_ms
from svc_monitor.slowlog.models import EntryFilter
from svc_monitor.slowlog.schemas import PatternAnalysis, StoredLogEntry
from svc_monitor.slowlog.service import SlowlogService
from svc_monitor.web.dependencies import Ui, UiDep
from svc_monitor.web.links import custom_window, filter_query
from svc_monitor.web.live import pushed
from svc_monitor.web.pages import Page
from svc_monitor.web.sections import Section, load

PAGE = Page("slowlog", "/slowlog", "Slow log", live_only=True)
router = APIRouter(include_in_schema=False)

PAGE_SIZE = 100
# The first page re-reads history as often as the polls store it, but not more than
# every 2 s however fast they run (a view costs a history query and a pattern pass).
MIN_REFRESH_MS = 2_000
# Patterns over the newest stored entries, as the API's `count` does: about four rings
# of the default 128 entries. A week of history (bench/ui_pages.py) analyses 500 in
# ~11 ms and 1000 in 25-50 ms, up to half the page's 100 ms budget on its own.
PATTERN_COUNT = 500
PATTERNS_SHOWN = 25
REQUIREMENT = "COMMANDLOG needs Valkey 8.1 or newer"
WINDOWS = {
    "15m": ("Last 15 min", 15 * 60_000),
    "1h": ("Last hour", 3_600_000),
    "6h": ("Last 6 hours", 6 * 3_600_000),
    "24h": ("Last 24 hours", 24 * 3_600_000),
    "7d": ("Last 7 days", 7 * 24 * 3_600_000),
}
# The store's command column is 64 characters wide: a longer filter matches nothing.
COMMAND_CHARS = 64


@dataclass(frozen=True, slots=True)
class Tab:
    key: str
    title: str
    log_type: LogType | None  # None: SLOWLOG; otherwise a COMMANDLOG type
    measure: str  # what the entry's number is: a duration (µs) or a size (bytes)


TABS = {
    "slow": Tab("slow", "Slow commands", None, "duration"),
    "large-request": Tab("large-request", "Large requests", "large-request", "size"),
    "large-reply": Tab("large-reply", "Large replies", "large-reply", "size"),
}


@dataclass(frozen=True, slots=True)
class Filters:
    """The page's query: which log, which window, which command, how slow or large."""

    log: str = "slow"
    window: str = ""  # a WINDOWS key; "" is all of history
    # A custom window (epoch ms, the browser's From/To); it takes the place of `window`.
    since: int | None = None
    until: int | None = None
    command: str = ""
    min: int | None = None
    page: int = 0

    @property
    def tab(self) -> Tab:
        return TABS[self.log]

    def query(self, **changes: object) -> str:
        """This query string with `changes`, empty values left out (for links)."""
        values = {
            "log": self.log,
            "window": self.window,
            "from": "" if self.since is None else str(self.since),
            "to": "" if self.until is None else str(self.until),
            "command": self.command,
            "min": "" if self.min is None else str(self.min),
            "page": str(self.page) if self.page else "",
        }
        return filter_query(values, changes)


@dataclass(frozen=True, slots=True)
class LogView:
    filters: Filters
    # The COMMANDLOG tabs on an engine without it: the requirement instead of history.
    requirement: Section[None] | None
    # The COMMANDLOG tabs before the engine has answered: not known yet either way.
    checking: bool
    entries: Section[list[StoredLogEntry]]
    has_more: bool
    patterns: Section[PatternAnalysis]


def parse_filters(
    log: str | None,
    window: str | None,
    command: str | None,
    min_: str | None,
    page: str | None,
    *,
    since: str | None = None,
    until: str | None = None,
) -> Filters:
    """The query as typed; anything unusable falls back to its default instead of a 422."""
    custom = custom_window(since, until)
    return Filters(
        log=log if log in TABS else "slow",
        window=window if window in WINDOWS and custom is None else "",
        since=custom[0] if custom else None,
        until=custom[1] if custom else None,
        command=(command or "").strip()[:COMMAND_CHARS],
        min=_whole(min_),
        page=_whole(page) or 0,
    )


def _whole(text: str | None) -> int | None:
    text = (text or "").strip()
    return int(text) if text.isdigit() and len(text) <= 15 else None


def command_log_requirement(identity: EngineIdentity) -> Section[None] | None:
    """The requirement message when this engine lacks COMMANDLOG, or None when it has it."""
    capabilities = identity.capabilities
    if capabilities.has_command_log:
        return None
    if identity.type == "valkey" and identity.release() >= (8, 1, 0):
        # New enough, so refused: renamed, disabled by the provider, or denied (its words).
        return Section.unsupported(unavailable_reason(capabilities, "command_log"))
    detail = f"This instance is {identity.type.capitalize()} {identity.version}."
    return Section.unsupported(f"{REQUIREMENT}. {detail}")


def slow_log_requirement(identity: EngineIdentity) -> Section[None] | None:
    """Why the slow tab has nothing when detection found SLOWLOG missing, else None."""
    if identity.capabilities.has_slow_log:
        return None
    return Section.unsupported(unavailable_reason(identity.capabilities, "slow_log"))


async def read_log(ui: Ui, connection: Connection, filters: Filters) -> LogView:
    log_type = filters.tab.log_type
    identity = ui.shell.identity
    if log_type is not None and identity is None:
        # Unknown until the engine answers; asking it here would hold the page for a
        # connect timeout whenever it is down (the banner above says which it is).
        return LogView(filters, None, True, Section(value=[]), False, Section())
    if identity is not None:
        requirement = (
            slow_log_requirement(identity)
            if log_type is None
            else command_log_requirement(identity)
        )
        if requirement is not None:
            return LogView(filters, requirement, False, Section(value=[]), False, Section())
    service = ui.features.slowlog
    entries = await load(_history(service, connection, filters))
    patterns = await load(service.patterns(connection, count=PATTERN_COUNT, log_type=log_type))
    rows = entries.value or []
    shown = Section(value=rows[:PAGE_SIZE]) if entries.ok else entries
    return LogView(filters, None, False, shown, len(rows) > PAGE_SIZE, patterns)


async def _history(
    service: SlowlogService, connection: Connection, filters: Filters
) -> list[StoredLogEntry]:
    window = WINDOWS.get(filters.window)
    since = now_ms() - window[1] if window else filters.since
    where = EntryFilter(since, filters.until, filters.command or None, filters.min)
    # One row past the page says whether an older page exists.
    limit, offset = PAGE_SIZE + 1, filters.page * PAGE_SIZE
    log_type = filters.tab.log_type
    if log_type is None:
        return await service.slowlog_history(connection, where, limit=limit, offset=offset)
    return list(
        await service.commandlog_history(
            connection, where, log_type=log_type, limit=limit, offset=offset
        )
    )


Log = Annotated[str | None, Query()]
Window = Annotated[str | None, Query()]
Command = Annotated[str | None, Query()]
Min = Annotated[str | None, Query(alias="min")]
PageNumber = Annotated[str | None, Query(alias="page")]
Since = Annotated[str | None, Query(alias="from")]
Until = Annotated[str | None, Query(alias="to")]


@router.get("/slowlog")
async def slowlog_page(
    ui: UiDep,
    log: Log = None,
    window: Window = None,
    command: Command = None,
    min_: Min = None,
    page: PageNumber = None,
    since: Since = None,
    until: Until = None,
) -> HTMLResponse:
    """The tabs, the filters, one page of stored entries and the pattern analysis."""
    if pushed(ui.shell):
        return ui.page(PAGE, "slowlog/page.html")
    filters = parse_filters(log, window, command, min_, page, since=since, until=until)
    connection = ui.shell.connection
    view = None if connection is None else await read_log(ui, connection, filters)
    return ui.page(PAGE, "slowlog/page.html", filters=filters, view=view, **_lists(ui))


@router.get("/ui/slowlog/log")
async def slowlog_log(
    ui: UiDep,
    log: Log = None,
    window: Window = None,
    command: Command = None,
    min_: Min = None,
    page: PageNumber = None,
    since: Since = None,
    until: Until = None,
) -> HTMLResponse:
    """The entries and patterns alone, which the first page refreshes every few seconds."""
    if pushed(ui.shell):
        return ui.fragment("shell/needs_live.html")
    filters = parse_filters(log, window, command, min_, page, since=since, until=until)
    connection = ui.shell.connection
    view = None if connection is None else await read_log(ui, connection, filters)
    return ui.fragment("slowlog/log.html", view=view, **_lists(ui))


def _lists(ui: Ui) -> dict[str, Any]:
    return {
        "tabs": TABS,
        "windows": WINDOWS,
        "page_size": PAGE_SIZE,
        "patterns_shown": PATTERNS_SHOWN,
        "refresh_ms": max(MIN_REFRESH_MS, ui.services.settings.SLOWLOG_POLL_INTERVAL_MS),
    }
