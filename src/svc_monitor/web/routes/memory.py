"""Memory: where the server's memory goes (MEMORY STATS), its own advice (MEMORY DOCTOR),
and memory over time."""

import asyncio
from dataclasses import dataclass

from fastapi import APIRouter
from fastapi.responses import HTMLResponse

from svc_monitor.live.schemas import MemoryStatsRead, Scalar
from svc_monitor.web.dependencies import Ui, UiDep
from svc_monitor.web.doctor import doctor_section
from svc_monitor.web.live import load_live
from svc_monitor.web.pages import RANGES, Page
from svc_monitor.web.rendering import format_bytes, format_number
from svc_monitor.web.sections import Section

PAGE = Page("memory", "/memory", "Memory")
router = APIRouter(include_in_schema=False)

# /api/memory-analytics/snapshots returns raw rows (no maxPoints): measured with 10 s
# samples, 1 hour (360 rows) answers in ~12 ms, 6 hours (2,160) in ~66 ms, 24 hours in
# ~240 ms. Its charts (RSS, peak, fragmentation) offer only what stays under 50 ms; longer
# windows use /api/metrics/history, which averages into buckets.
SNAPSHOT_RANGES = {key: RANGES[key] for key in ("15m", "1h")}
SNAPSHOT_LIMIT = 2000
# MEMORY STATS fields that are not byte counts.
_COUNTS = frozenset({"keys.count", "db.dict.rehashing.count"})


@dataclass(frozen=True, slots=True)
class StatRow:
    """One MEMORY STATS field: the engine's own name and value, and as people read it."""

    name: str
    raw: Scalar
    shown: str


@dataclass(frozen=True, slots=True)
class MemoryStats:
    """MEMORY STATS, by name for the cards and as rows for the full table."""

    values: dict[str, Scalar]
    rows: list[StatRow]

    def bytes(self, name: str) -> str:
        value = self.values.get(name)
        return format_bytes(value) if isinstance(value, int | float) else "\u2013"

    def number(self, name: str, digits: int = 2) -> str:
        value = self.values.get(name)
        return format_number(value, digits) if isinstance(value, int | float) else "\u2013"


def _shown(name: str, value: Scalar) -> str:
    if isinstance(value, str):
        return value
    if name.endswith(".percentage"):
        return f"{value:.1f}%"
    if isinstance(value, float) or name.endswith(".ratio") or name == "fragmentation":
        return format_number(value, 2)
    if name in _COUNTS or name.endswith(".count"):
        return format_number(value)
    return format_bytes(value)


def memory_stats(read: MemoryStatsRead) -> MemoryStats:
    """Flatten per-database entries (`db.0` -> `db.0.overhead.hashtable.main`)."""
    values: dict[str, Scalar] = {}
    for name, value in read.root.items():
        if isinstance(value, dict):
            values.update({f"{name}.{inner}": v for inner, v in value.items()})
        else:
            values[name] = value
    rows = [StatRow(name, value, _shown(name, value)) for name, value in values.items()]
    return MemoryStats(values, rows)


@dataclass(frozen=True, slots=True)
class Limits:
    """The memory limit and eviction policy, from the latest INFO the poller read."""

    maxmemory: int | None
    policy: str | None


@dataclass(frozen=True, slots=True)
class PushedMemory:
    """A push connection's memory now, from the INFO fields its Collector pushed (None
    for a field it does not push); MEMORY STATS needs a live connection."""

    used: int | None
    rss: int | None
    peak: int | None
    fragmentation: float | None
    received_at_ms: int


def _pushed_memory(ui: Ui) -> PushedMemory | None:
    connection = ui.shell.connection
    if connection is None or not connection.pushed:
        return None
    latest = ui.services.live_state.latest(connection.id)
    if latest is None:
        return None
    info = latest.info
    return PushedMemory(
        used=info.get_int("memory", "used_memory"),
        rss=info.get_int("memory", "used_memory_rss"),
        peak=info.get_int("memory", "used_memory_peak"),
        fragmentation=info.get_float("memory", "mem_fragmentation_ratio"),
        received_at_ms=latest.received_at_ms,
    )


async def _limits(ui: Ui) -> Limits | None:
    connection = ui.shell.connection
    if connection is None:
        return None
    latest = ui.services.live_state.latest(connection.id)
    if latest is None:  # polled by another replica: read live
        latest, _ = await ui.features.observed_elsewhere.latest(connection)
    if latest is None:
        return None
    info = latest.info
    return Limits(info.get_int("memory", "maxmemory"), info.get_str("memory", "maxmemory_policy"))


async def _stats(ui: Ui) -> Section[MemoryStats]:
    connection = ui.shell.connection
    assert connection is not None
    read = await load_live(ui.shell, lambda: ui.features.live.memory_stats(connection))
    if read.value is None:
        return Section(problem=read.problem, message=read.message)
    return Section(memory_stats(read.value))


@router.get("/memory")
async def memory_page(ui: UiDep) -> HTMLResponse:
    """MEMORY STATS, MEMORY DOCTOR, and memory history charts."""
    connection = ui.shell.connection
    if connection is None:
        return ui.page(PAGE, "memory/page.html")
    live = ui.features.live
    stats, raw_doctor = await asyncio.gather(
        _stats(ui), load_live(ui.shell, lambda: live.memory_doctor(connection))
    )
    return ui.page(
        PAGE,
        "memory/page.html",
        stats=stats,
        doctor=doctor_section(raw_doctor),
        limits=await _limits(ui),
        pushed_memory=_pushed_memory(ui),
        ranges=RANGES,
        snapshot_ranges=SNAPSHOT_RANGES,
        snapshot_limit=SNAPSHOT_LIMIT,
    )
