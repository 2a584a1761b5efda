"""AI Traces: traces sent to POST /v1/traces, listed, drawn as waterfalls, and set
against the chosen instance's state at the trace's time.

The list is TraceService.list_traces (what GET /api/traces answers) under the page's
filters, newest first, and refreshes itself. The waterfall is TraceService.get_trace:
spans in tree order, one row each, a bar offset by its start and as wide as its
duration on a 0-1000 scale of the whole trace (inline SVG: the page's CSP allows no
inline styles, and SVG geometry is attributes). A click on a span loads its
attributes and events beside the waterfall. The instance panel reads the chosen
connection's INFO history (InfoHistoryService.history) around the trace's start.

The page needs no connection: traces belong to applications; without one, the
instance panel says so.
"""

from dataclasses import dataclass
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Query
from fastapi.responses import HTMLResponse

from svc_monitor.auth.dependencies.origin import reached_base
from svc_monitor.connections.models import Connection
from svc_monitor.events import now_ms
from svc_monitor.traces.schemas import SpanRead, TraceRead, TraceSummaryRead
from svc_monitor.web.dependencies import Ui, UiDep
from svc_monitor.web.links import custom_window, filter_query
from svc_monitor.web.pages import Page
from svc_monitor.web.sections import Section, load

PAGE = Page("traces", "/ai-traces", "AI Traces", needs_connection=False)
router = APIRouter(include_in_schema=False)

WINDOWS = {
    "15m": ("Last 15 min", 15 * 60_000),
    "1h": ("Last hour", 3_600_000),
    "6h": ("Last 6 hours", 6 * 3_600_000),
    "24h": ("Last 24 hours", 24 * 3_600_000),
    "7d": ("Last 7 days", 7 * 24 * 3_600_000),
}
STATUSES = {"error": "Error", "ok": "OK", "unset": "Unset"}
LIST_LIMIT = 100
REFRESH_MS = 5_000
SCALE = 1000  # the waterfall's SVG width: offsets and widths are thousandths of the trace
MIN_BAR = 2  # a span too short to see still shows as a sliver
DEEPEST_INDENT = 12  # deeper spans indent no further (CSS classes depth-0 ... depth-12)
TICKS = (0.0, 0.25, 0.5, 0.75, 1.0)
# INFO history is sampled every HISTORY_SAMPLE_INTERVAL_MS (10 s by default): look this
# many intervals either side of the trace for the sample nearest its start.
HISTORY_REACH = 3

TraceStatus = Literal["ok", "error", "unset"]


@dataclass(frozen=True, slots=True)
class Filters:
    window: str = "1h"
    service: str = ""
    status: str = ""
    min: float | None = None
    # A custom window (epoch ms, the browser's From/To); it takes the place of `window`.
    start: int | None = None
    end: int | None = None

    def query(self, **changes: object) -> str:
        values = {
            "window": self.window,
            "from": "" if self.start is None else str(self.start),
            "to": "" if self.end is None else str(self.end),
            "service": self.service,
            "status": self.status,
            "min": "" if self.min is None else f"{self.min:g}",
        }
        return filter_query(values, changes)

    @property
    def active(self) -> bool:
        return bool(
            self.service
            or self.status
            or self.min is not None
            or self.window != "1h"
            or self.start is not None
        )


QueryText = Annotated[str | None, Query()]


def parse_filters(
    window: QueryText = None,
    service: QueryText = None,
    status: QueryText = None,
    min_: Annotated[str | None, Query(alias="min")] = None,
    since: Annotated[str | None, Query(alias="from")] = None,
    until: Annotated[str | None, Query(alias="to")] = None,
) -> Filters:
    """The query as typed; anything unusable falls back to its default instead of a 422.
    A dependency: the page and both of its fragments take the same filters."""
    minimum: float | None = None
    try:
        minimum = float((min_ or "").strip()) if (min_ or "").strip() else None
    except ValueError:
        minimum = None
    if minimum is not None and not 0 <= minimum < 1e12:
        minimum = None
    custom = custom_window(since, until)
    return Filters(
        window=window if window in WINDOWS and custom is None else "1h",
        start=custom[0] if custom else None,
        end=custom[1] if custom else None,
        service=(service or "").strip()[:256],
        status=status if status in STATUSES else "",
        min=minimum,
    )


FiltersDep = Annotated[Filters, Depends(parse_filters)]


@dataclass(frozen=True, slots=True)
class Bar:
    """One span's row of the waterfall."""

    span: SpanRead
    x: float
    width: float
    indent: int
    error: bool
    events: list[float]  # event marks, on the same scale as x


@dataclass(frozen=True, slots=True)
class Waterfall:
    trace: TraceRead
    bars: list[Bar]
    ticks: list[str]  # the axis labels at 0, 25, 50, 75 and 100% of the trace


@dataclass(frozen=True, slots=True)
class InstanceMoment:
    """The chosen instance as its history saw it nearest the trace's start."""

    connection: Connection
    at_ms: int | None  # None: no history at that time
    used_memory: float | None = None
    ops_per_sec: float | None = None
    clients: float | None = None


def waterfall(trace: TraceRead) -> Waterfall:
    total = trace.durationMs or 0.0

    def place(offset_ms: float) -> float:
        return round(min(max(offset_ms / total, 0.0), 1.0) * SCALE, 2) if total > 0 else 0.0

    bars = []
    for span in trace.spans:
        x = place(span.offsetMs)
        width = max(round(span.durationMs / total * SCALE, 2), MIN_BAR) if total > 0 else SCALE
        bars.append(
            Bar(
                span=span,
                x=min(x, SCALE - MIN_BAR),
                width=min(width, SCALE - min(x, SCALE - MIN_BAR)),
                indent=min(span.depth, DEEPEST_INDENT),
                error=span.statusCode == "error",
                events=[place(e.offsetMs) for e in span.events],
            )
        )
    return Waterfall(trace, bars, [duration_label(t * total) for t in TICKS])


def duration_label(ms: float) -> str:
    """A duration with as many digits as its size deserves: 0.42 ms, 12.5 ms, 2.31 s."""
    if ms >= 1000:
        return f"{ms / 1000:.2f} s"
    if ms >= 100:
        return f"{ms:.0f} ms"
    if ms >= 10:
        return f"{ms:.1f} ms"
    return f"{ms:.2f} ms" if ms else "0 ms"


async def instance_moment(ui: Ui, connection: Connection, trace: TraceRead) -> InstanceMoment:
    reach = ui.services.settings.HISTORY_SAMPLE_INTERVAL_MS * HISTORY_REACH
    start = trace.startTimeMs
    series = await ui.services.info_history.history(
        connection.id,
        since=start - reach,
        until=start + int(trace.durationMs) + reach,
        max_points=200,
    )
    points = [p for p in series.points if p.samples > 0]
    if not points:
        return InstanceMoment(connection, None)
    nearest = min(points, key=lambda p: abs(p.t - start))
    return InstanceMoment(
        connection,
        nearest.t,
        used_memory=nearest.usedMemory,
        ops_per_sec=nearest.opsPerSec,
        clients=nearest.connectedClients,
    )


async def _list(ui: Ui, filters: Filters) -> Section[list[TraceSummaryRead]]:
    status: TraceStatus | None = filters.status or None  # type: ignore[assignment]
    read = ui.services.traces.list_traces(
        since=filters.start if filters.start is not None else now_ms() - WINDOWS[filters.window][1],
        until=filters.end,
        service=filters.service or None,
        status=status,
        min_duration_ms=filters.min,
        limit=LIST_LIMIT,
    )
    listed = await load(read)
    if listed.value is None:
        return Section(problem=listed.problem, message=listed.message)
    return Section(listed.value.traces)


@dataclass(frozen=True, slots=True)
class Chosen:
    """The trace the page draws (if any) and the span whose details it shows."""

    trace: Section[TraceRead] | None = None
    drawn: Waterfall | None = None
    span: SpanRead | None = None


async def choose(ui: Ui, trace_id: str | None, span_id: str | None) -> Chosen:
    if not trace_id:
        return Chosen()
    read = await load(ui.services.traces.get_trace(trace_id))
    if read.value is None:
        return Chosen(read)
    drawn = waterfall(read.value)
    wanted = span_id or read.value.spans[0].spanId
    span = next((b.span for b in drawn.bars if b.span.spanId == wanted), read.value.spans[0])
    return Chosen(read, drawn, span)


@router.get("/ai-traces")
async def traces_page(
    ui: UiDep,
    filters: FiltersDep,
    trace: QueryText = None,
    span: QueryText = None,
) -> HTMLResponse:
    """Recent traces under the filters; the chosen one (else the newest) as a waterfall."""
    listed = await _list(ui, filters)
    chosen_id = trace or (listed.value[0].traceId if listed.value else None)
    chosen = await choose(ui, chosen_id, span)
    moment = None
    if chosen.drawn is not None and ui.shell.connection is not None:
        moment = await instance_moment(ui, ui.shell.connection, chosen.drawn.trace)
    services = await ui.services.traces.services(since=now_ms() - WINDOWS["7d"][1])
    settings = ui.services.settings
    return ui.page(
        PAGE,
        "traces/page.html",
        filters=filters,
        windows=WINDOWS,
        statuses=STATUSES,
        services=services,
        listed=listed,
        chosen=chosen.trace,
        chosen_id=chosen_id,
        drawn=chosen.drawn,
        span=chosen.span,
        moment=moment,
        scale=SCALE,
        ms=duration_label,
        refresh_ms=REFRESH_MS,
        endpoint=reached_base(ui.request, settings) + "/v1/traces",
        ingest_enabled=settings.OTEL_INGEST_ENABLED,
        token_required=settings.OTEL_INGEST_TOKEN is not None,
    )


@router.get("/ui/ai-traces/list")
async def traces_list(
    ui: UiDep,
    filters: FiltersDep,
    trace: QueryText = None,
) -> HTMLResponse:
    """The trace list alone: what the page's refresh swaps in."""
    listed = await _list(ui, filters)
    return ui.fragment(
        "traces/list.html", filters=filters, listed=listed, chosen_id=trace, ms=duration_label
    )


@router.get("/ui/ai-traces/view")
async def trace_view(
    ui: UiDep,
    filters: FiltersDep,
    trace: QueryText = None,
    span: QueryText = None,
) -> HTMLResponse:
    """One trace's waterfall with a span's attributes and events: what a click on a span
    swaps in."""
    chosen = await choose(ui, trace, span)
    if chosen.drawn is None:
        missing = chosen.trace or Section(problem="error", message="Choose a trace first.")
        return ui.fragment("traces/missing.html", chosen=missing)
    return ui.fragment(
        "traces/view.html",
        filters=filters,
        drawn=chosen.drawn,
        span=chosen.span,
        scale=SCALE,
        ms=duration_label,
    )
