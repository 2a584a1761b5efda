"""Dashboard: the instance at a glance from the latest INFO, and its history as charts."""

from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter
from fastapi.responses import HTMLResponse

from svc_monitor.pipe.live_view import CpuReading, cpu_reading
from svc_monitor.pipe.observation import Observation
from svc_monitor.web.dependencies import Ui, UiDep
from svc_monitor.web.pages import RANGES, Page

PAGE = Page("dashboard", "/", "Dashboard")
router = APIRouter(include_in_schema=False)


@dataclass(frozen=True, slots=True)
class Overview:
    """The dashboard's cards, read off one INFO (and the one before it, for CPU)."""

    version: str | None
    role: str | None
    uptime_s: int | None
    used_memory: int | None
    used_memory_rss: int | None
    used_memory_peak: int | None
    maxmemory: int | None
    ops_per_sec: int | None
    connected_clients: int | None
    blocked_clients: int | None
    cpu_percent: float | None
    # KiB/s, whatever the INFO field's name says: the engine divides its bytes-per-second
    # sample by 1024 (server.c, instantaneous_input_kbps), so kilobytes, never kilobits.
    net_input_kbps: float | None
    net_output_kbps: float | None
    hit_ratio: float | None
    keyspace: dict[str, dict[str, Any]]
    connected_replicas: int | None
    master_link_status: str | None
    received_at_ms: int


def _uptime_s(latest: Observation) -> int | None:
    """The uptime as of this observation: the server section is read with the full INFO
    (every 10 s by default), so the seconds since that read are counted on."""
    uptime = latest.info.get_int("server", "uptime_in_seconds")
    if uptime is None:
        return None
    return uptime + (latest.received_at_ms - latest.read_at_ms("server")) // 1000


def overview(latest: Observation, previous: CpuReading | None) -> Overview:
    info = latest.info
    hits = info.get_int("stats", "keyspace_hits")
    misses = info.get_int("stats", "keyspace_misses")
    lookups = (hits or 0) + (misses or 0)
    keyspace = info.sections.get("keyspace") or {}
    return Overview(
        version=info.get_str("server", "valkey_version") or info.get_str("server", "redis_version"),
        role=info.get_str("replication", "role"),
        uptime_s=_uptime_s(latest),
        used_memory=info.get_int("memory", "used_memory"),
        used_memory_rss=info.get_int("memory", "used_memory_rss"),
        used_memory_peak=info.get_int("memory", "used_memory_peak"),
        maxmemory=info.get_int("memory", "maxmemory"),
        ops_per_sec=info.get_int("stats", "instantaneous_ops_per_sec"),
        connected_clients=info.get_int("clients", "connected_clients"),
        blocked_clients=info.get_int("clients", "blocked_clients"),
        cpu_percent=_cpu_percent(latest, previous),
        net_input_kbps=info.get_float("stats", "instantaneous_input_kbps"),
        net_output_kbps=info.get_float("stats", "instantaneous_output_kbps"),
        hit_ratio=100 * (hits or 0) / lookups if lookups else None,
        keyspace={db: dict(v) for db, v in keyspace.items() if isinstance(v, dict)},
        connected_replicas=info.get_int("replication", "connected_slaves"),
        master_link_status=info.get_str("replication", "master_link_status"),
        received_at_ms=latest.received_at_ms,
    )


def _cpu_percent(latest: Observation, previous: CpuReading | None) -> float | None:
    """Server CPU (system + user) over the last poll interval, as % of one core."""
    if previous is None or latest.received_at_ms <= previous.at_ms:
        return None
    now = cpu_reading(latest)
    if now.cpu_s is None or previous.cpu_s is None:
        return None
    elapsed_s = (now.at_ms - previous.at_ms) / 1000
    return max(0.0, 100 * (now.cpu_s - previous.cpu_s) / elapsed_s)


async def _overview(ui: Ui) -> Overview | None:
    connection = ui.shell.connection
    if connection is None:
        return None
    live = ui.services.live_state
    latest, previous = live.latest(connection.id), live.previous(connection.id)
    if latest is None:  # polled by another replica: read live
        latest, previous = await ui.features.observed_elsewhere.latest(connection)
    return overview(latest, previous) if latest else None


@router.get("/")
async def dashboard(ui: UiDep) -> HTMLResponse:
    return ui.page(PAGE, "dashboard/page.html", overview=await _overview(ui), ranges=RANGES)


@router.get("/ui/dashboard/live")
async def dashboard_live(ui: UiDep) -> HTMLResponse:
    """The cards alone, which the page refreshes every few seconds."""
    return ui.fragment("dashboard/live.html", overview=await _overview(ui))
