"""Latency: the engine's latency monitor (events, history, doctor), command latency
histograms (the workload's, with svc-monitor's own polls apart: web/own_commands.py),
and the spikes svc-monitor stored."""

import asyncio
from bisect import bisect_right
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import TypeVar

from fastapi import APIRouter
from fastapi.responses import HTMLResponse

from svc_monitor.connections.models import Connection
from svc_monitor.engine.capabilities import unavailable_reason
from svc_monitor.events import now_ms
from svc_monitor.latency_analytics.schemas import (
    HistogramEntry,
    LatencyHistogramRead,
    LatencySnapshotRead,
)
from svc_monitor.live.schemas import CommandHistogramRead, ConfigParameterRead
from svc_monitor.web.bars import Bar
from svc_monitor.web.dependencies import Ui, UiDep
from svc_monitor.web.doctor import DoctorReport, doctor_section
from svc_monitor.web.live import load_live
from svc_monitor.web.own_commands import OWN_COMMANDS, sent_by_us
from svc_monitor.web.pages import RANGES, Page
from svc_monitor.web.sections import Section, load

T = TypeVar("T")

PAGE = Page("latency", "/latency", "Latency", live_only=True)
router = APIRouter(include_in_schema=False)

NO_MONITOR = (
    "The latency monitor (LATENCY) is not available here: it needs Redis 2.8.13 or newer, "
    "or Valkey, and the command must not be renamed or denied to this user"
)
THRESHOLD = "latency-monitor-threshold"
NO_HISTOGRAM = "LATENCY HISTOGRAM needs Redis 7.0 or newer, or Valkey"
# Charts per event and histogram rows: a server has a dozen event kinds and hundreds of
# commands; the busiest are what an operator reads.
SHOWN_EVENTS = 12
SHOWN_COMMANDS = 25
SHOWN_SPIKES = 50
_RECENT_MS = 3_600_000
# One poll every 30 s (LATENCY_POLL_INTERVAL_MS) stores at most 120 rows per event an hour.
_STORED_LIMIT = 2000


@dataclass(frozen=True, slots=True)
class CommandLatency:
    """One command's histogram read as percentiles (µs), since start and over the last hour."""

    command: str
    calls: int
    p50: int | None
    p99: int | None
    p999: int | None
    bars: list[Bar[int]]  # bound: the bucket's upper bound in µs
    recent_calls: int | None
    recent_p99: int | None
    ours: int = 0  # calls svc-monitor itself sent, since CommandTable.since_ms


@dataclass(frozen=True, slots=True)
class CommandTable:
    """The histogram's commands in two groups: the workload's, and svc-monitor's own polls
    (OWN_COMMANDS), each busiest first."""

    workload: list[CommandLatency]
    own: list[CommandLatency]
    since_ms: int  # when this process began counting what it sends (its CommandLedger)

    @property
    def own_calls(self) -> int:
        return sum(c.calls for c in self.own)


BAR_WIDTH = 8
BAR_HEIGHT = 24


def _cumulative(entry: HistogramEntry | CommandHistogramRead) -> list[tuple[int, int]]:
    """(bucket upper bound in µs, calls at or under it), ascending."""
    return sorted((int(bound), calls) for bound, calls in entry.histogram.items())


def _percentile(points: list[tuple[int, int]], total: int, fraction: float) -> int | None:
    """The smallest bucket bound holding `fraction` of the calls (as precise as the buckets)."""
    if total <= 0:
        return None
    wanted = fraction * total
    return next((bound for bound, calls in points if calls >= wanted), points[-1][0])


def _at(points: list[tuple[int, int]], bound: int) -> int:
    """Calls at or under `bound`: the engine reports only the bounds where the count grew."""
    index = bisect_right([b for b, _ in points], bound)
    return points[index - 1][1] if index else 0


def _bars(points: list[tuple[int, int]], total: int) -> list[Bar[int]]:
    bars, before = [], 0
    for index, (bound, calls) in enumerate(points):
        count = calls - before
        before = calls
        height = round(BAR_HEIGHT * count / total) if total else 0
        bars.append(Bar(index * BAR_WIDTH, max(height, 1 if count else 0), bound, count))
    return bars


def command_latency(
    command: str, now: CommandHistogramRead, before: HistogramEntry | None
) -> CommandLatency:
    points = _cumulative(now)
    recent_calls = recent_p99 = None
    if before is not None and before.calls <= now.calls:  # fewer calls now: stats were reset
        earlier = _cumulative(before)
        bounds = sorted({b for b, _ in points} | {b for b, _ in earlier})
        delta = [(b, _at(points, b) - _at(earlier, b)) for b in bounds]
        recent_calls = now.calls - before.calls
        recent_p99 = _percentile(delta, recent_calls, 0.99)
    return CommandLatency(
        command=command,
        calls=now.calls,
        p50=_percentile(points, now.calls, 0.5),
        p99=_percentile(points, now.calls, 0.99),
        p999=_percentile(points, now.calls, 0.999),
        bars=_bars(points, now.calls),
        recent_calls=recent_calls,
        recent_p99=recent_p99,
    )


def _histogram_unsupported(ui: Ui) -> bool:
    identity = ui.shell.identity
    return identity is not None and identity.type == "redis" and identity.release() < (7, 0, 0)


async def _histogram(ui: Ui, connection: Connection, since: int) -> Section[CommandTable]:
    if _histogram_unsupported(ui):
        return Section.unsupported(NO_HISTOGRAM)
    live = await load_live(ui.shell, lambda: ui.features.live.latency_histogram(connection, []))
    if live.value is None:
        return Section(problem=live.problem, message=live.message)
    # The oldest stored histogram of the last hour: the difference is that hour's calls.
    stored = await load(
        ui.features.latency_analytics.histograms(
            connection.id, since=since, until=None, limit=1, offset=0
        )
    )
    before: LatencyHistogramRead | None = stored.value[0] if stored.value else None
    # A command missing from the earlier histogram had not been called then.
    unseen = HistogramEntry(calls=0, histogram={})
    ledger = ui.services.connections.ledger(connection)
    ours = sent_by_us(ledger)
    rows = [
        replace(
            command_latency(name, h, before.data.get(name, unseen) if before else None),
            ours=ours.get(name, 0),
        )
        for name, h in live.value.items()
    ]
    rows.sort(key=lambda r: (-r.calls, r.command))
    return Section(
        CommandTable(
            workload=[r for r in rows if r.command not in OWN_COMMANDS],
            own=[r for r in rows if r.command in OWN_COMMANDS],
            since_ms=ledger.since_ms,
        )
    )


async def _spikes(connection: Connection, ui: Ui, since: int) -> list[LatencySnapshotRead]:
    rows = await ui.features.latency_analytics.snapshots(
        connection.id, since=since, until=None, limit=_STORED_LIMIT, offset=0
    )
    return rows[::-1][:SHOWN_SPIKES]  # stored oldest first; the page reads newest first


async def _monitor(ui: Ui, monitored: bool, read: Callable[[], Awaitable[T]]) -> Section[T]:
    """A read of the latency monitor, unless detection found it missing."""
    return await load_live(ui.shell, read) if monitored else Section.unsupported(NO_MONITOR)


async def _missing(message: str) -> Section[CommandTable]:
    return Section.unsupported(message)


async def _doctor(ui: Ui, monitored: bool, connection: Connection) -> Section[DoctorReport]:
    read = await _monitor(ui, monitored, lambda: ui.features.live.latency_doctor(connection))
    return doctor_section(read)


async def _threshold(
    ui: Ui, connection: Connection, monitored: bool
) -> Section[ConfigParameterRead]:
    """latency-monitor-threshold, read with CONFIG GET; where detection found CONFIG missing
    (a managed provider's plan, rename-command, ACL), why it cannot be shown, unasked."""
    identity = ui.shell.identity
    if identity is not None and not identity.capabilities.has_config:
        return Section.unsupported(unavailable_reason(identity.capabilities, "config"))
    live = ui.features.live
    return await _monitor(ui, monitored, lambda: live.config_parameter(connection, THRESHOLD))


@router.get("/latency")
async def latency_page(ui: UiDep) -> HTMLResponse:
    """Latest spikes per event, their history, command latency histograms, and the doctor."""
    connection = ui.shell.connection
    if connection is None or connection.pushed:
        return ui.page(PAGE, "latency/page.html")
    live = ui.features.live
    identity = ui.shell.identity
    monitored = identity is None or identity.capabilities.has_latency_monitor
    since = now_ms() - _RECENT_MS
    threshold, latest, doctor, histogram, spikes = await asyncio.gather(
        _threshold(ui, connection, monitored),
        _monitor(ui, monitored, lambda: live.latency_latest(connection)),
        _doctor(ui, monitored, connection),
        _histogram(ui, connection, since) if monitored else _missing(NO_MONITOR),
        load(_spikes(connection, ui, since)),
    )
    events = sorted(latest.value or [], key=lambda e: -e.timestamp)[:SHOWN_EVENTS]
    return ui.page(
        PAGE,
        "latency/page.html",
        threshold=threshold.value.value if threshold.value else None,
        # Only CONFIG's own absence is worth a note; the other sections tell the rest.
        threshold_missing=(
            threshold.message if monitored and threshold.problem == "unsupported" else None
        ),
        latest=latest,
        events=events,
        histogram=histogram,
        shown_commands=SHOWN_COMMANDS,
        spikes=spikes,
        doctor=doctor,
        ranges=RANGES,
        bar_width=BAR_WIDTH,
        bar_height=BAR_HEIGHT,
    )
