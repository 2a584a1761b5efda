"""Clients: who is connected now (CLIENT LIST, live) and how connections went (snapshots)."""

import math
from dataclasses import dataclass
from typing import Annotated, Any, cast, get_args
from urllib.parse import urlencode

from fastapi import APIRouter, Query
from fastapi.responses import HTMLResponse

from svc_monitor.api.dependencies import FeaturesDep, ServicesDep
from svc_monitor.api.params import MAX_EPOCH_MS
from svc_monitor.client_analytics.models import SnapshotFilter
from svc_monitor.client_analytics.schemas import ClientStats, ClientType, LiveClient
from svc_monitor.connections.dependencies import SelectedConnection
from svc_monitor.events import now_ms
from svc_monitor.web.dependencies import Ui, UiDep
from svc_monitor.web.live import load_live, pushed
from svc_monitor.web.pages import RANGES, Page
from svc_monitor.web.sections import Section, load

PAGE = Page("clients", "/clients", "Clients", live_only=True)
router = APIRouter(include_in_schema=False)

_SORT_FIELDS: dict[str, str] = {
    "id": "clientId",
    "addr": "addr",
    "name": "name",
    "user": "user",
    "age": "ageSeconds",
    "idle": "idleSeconds",
    "db": "db",
    "cmd": "cmd",
    "qbuf": "qbuf",
    "omem": "omem",
    "mem": "totMem",
}
# Columns where the largest is what an operator looks for first.
_DESCENDING_FIRST = frozenset({"age", "idle", "qbuf", "omem", "mem"})
# A page of thousands of rows is slow to render and to read; the count says what is left out.
SHOWN_CLIENTS = 200
TOP_GROUPS = 10
# Series a chart can tell apart (app.css has three chart colours).
CHART_NAMES = 3
# Measured with a week of 10-client polls every 60 s (bench/ui_pages.py): a 24-hour summary
# took ~290 ms to render, one hour ~20 ms; the charts cover longer windows.
_STATS_WINDOW_MS = 3_600_000
# Same week, /ui/clients/timeseries: 1 hour ~8 ms, 6 hours ~35 ms, 7 days ~730 ms. The
# per-name charts offer what stays near the 50 ms chart target; the total over longer
# windows comes from INFO history (/api/metrics/history), which SQL averages into buckets.
SERIES_RANGES = {key: RANGES[key] for key in ("15m", "1h", "6h")}
MAX_SERIES_WINDOW_MS = 6 * 3_600_000


@dataclass(frozen=True, slots=True)
class LiveTable:
    """The live client list as the page shows it: sorted, filtered, bounded."""

    rows: list[LiveClient]
    total: int
    sort: str
    descending: bool
    type: str | None

    def query(self, **changes: str) -> str:
        """This view's query string with `changes`: what a sort link or a refresh asks for."""
        params = {"sort": self.sort, "order": "desc" if self.descending else "asc"}
        if self.type:
            params["type"] = self.type
        return urlencode({**params, **changes})

    def sort_query(self, key: str) -> str:
        """Sort by `key`; a second click on the same column flips the order."""
        if key == self.sort:
            return self.query(order="asc" if self.descending else "desc")
        return self.query(sort=key, order="desc" if key in _DESCENDING_FIRST else "asc")


def _sorted(clients: list[LiveClient], sort: str, descending: bool) -> list[LiveClient]:
    field = _SORT_FIELDS[sort]
    present = [c for c in clients if getattr(c, field) is not None]
    missing = [c for c in clients if getattr(c, field) is None]  # last either way
    present.sort(key=lambda c: getattr(c, field), reverse=descending)
    return present + missing


async def _live_table(
    ui: Ui, *, sort: str | None, order: str | None, type: str | None
) -> Section[LiveTable]:
    connection = ui.shell.connection
    assert connection is not None
    key = sort if sort in _SORT_FIELDS else "id"  # the order CLIENT LIST itself uses
    descending = order == "desc" if order in ("asc", "desc") else key in _DESCENDING_FIRST
    kind = cast(ClientType, type) if type in get_args(ClientType) else None
    analytics = ui.features.client_analytics
    section = await load_live(
        ui.shell,
        lambda: analytics.live_clients(
            ui.services.connections.client(connection), include_monitor=False, type=kind
        ),
    )
    if section.value is None:
        return Section(problem=section.problem, message=section.message)
    rows = _sorted(section.value, key, descending)
    return Section(LiveTable(rows[:SHOWN_CLIENTS], len(rows), key, descending, kind))


def _chart_names(stats: Section[ClientStats]) -> list[str]:
    """The client names with most connections, as chart series (a comma would split one)."""
    if stats.value is None:
        return []
    named = [g.key for g in stats.value.byName if g.key and "," not in g.key]
    return named[:CHART_NAMES]


@router.get("/clients")
async def clients_page(
    ui: UiDep,
    sort: Annotated[str | None, Query(max_length=32)] = None,
    order: Annotated[str | None, Query(max_length=32)] = None,
    type: Annotated[str | None, Query(max_length=32)] = None,
) -> HTMLResponse:
    """The live client list, and connection history from the stored CLIENT LIST polls."""
    connection = ui.shell.connection
    if connection is None or connection.pushed:
        return ui.page(PAGE, "clients/page.html")
    live = await _live_table(ui, sort=sort, order=order, type=type)
    since = now_ms() - _STATS_WINDOW_MS
    stats = await load(
        ui.features.client_analytics.stats(SnapshotFilter(connection.id, since, None))
    )
    return ui.page(
        PAGE,
        "clients/page.html",
        live=live,
        stats=stats,
        top=TOP_GROUPS,
        chart_names=_chart_names(stats),
        ranges=RANGES,
        series_ranges=SERIES_RANGES,
        client_types=get_args(ClientType),
    )


@router.get("/ui/clients/live")
async def clients_live(
    ui: UiDep,
    sort: Annotated[str | None, Query(max_length=32)] = None,
    order: Annotated[str | None, Query(max_length=32)] = None,
    type: Annotated[str | None, Query(max_length=32)] = None,
) -> HTMLResponse:
    """The live table alone, which the page refreshes."""
    if pushed(ui.shell):
        return ui.fragment("shell/needs_live.html")
    if ui.shell.connection is None:
        return ui.fragment("clients/live.html", live=Section.unsupported("No connection chosen"))
    live = await _live_table(ui, sort=sort, order=order, type=type)
    return ui.fragment("clients/live.html", live=live, client_types=get_args(ClientType))


@router.get("/ui/clients/timeseries")
async def clients_timeseries(
    connection: SelectedConnection,
    services: ServicesDep,
    features: FeaturesDep,
    since: Annotated[int | None, Query(alias="from", ge=0, le=MAX_EPOCH_MS)] = None,
    until: Annotated[int | None, Query(alias="to", ge=0, le=MAX_EPOCH_MS)] = None,
    max_points: Annotated[int, Query(alias="maxPoints", ge=1, le=5000)] = 300,
    names: Annotated[str, Query(max_length=1000)] = "",
) -> dict[str, Any]:
    """Connection counts for the charts, in buckets sized to the window.

    `/api/client-analytics/timeseries` takes a fixed bucketMs and nests the counts per name;
    the charts know only the window and maxPoints, and draw top-level keys. Each point here
    carries `name:<client name>` for the names asked for. Windows past 6 hours are cut.
    """
    until = until if until is not None else now_ms()
    # Bounded: the service reads every snapshot of the window and groups them in Python.
    since = max(since if since is not None else 0, until - MAX_SERIES_WINDOW_MS)
    poll_ms = services.settings.CLIENT_ANALYTICS_POLL_INTERVAL_MS
    # Buckets finer than the poll interval would only hold gaps.
    bucket_ms = min(86_400_000, max(1000, poll_ms, math.ceil((until - since + 1) / max_points)))
    series = await features.client_analytics.timeseries(
        connection.id, since=since, until=until, bucket_ms=bucket_ms
    )
    wanted = [n for n in names.split(",") if n]
    points = [
        {
            "t": p.t,
            "maxConnections": p.maxConnections,
            "avgConnections": p.avgConnections,
            **{f"name:{n}": p.byName.get(n, 0) for n in wanted},
        }
        for p in series.points
    ]
    return {"from": series.from_, "to": series.to, "bucketMs": bucket_ms, "points": points}
