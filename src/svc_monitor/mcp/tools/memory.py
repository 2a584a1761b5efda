"""MEMORY STATS, MEMORY DOCTOR and the stored memory history."""

from typing import Any

from svc_monitor.mcp.api_caller import ApiCaller
from svc_monitor.mcp.output import REPORT_CHARS, figure, iso, listing, mb, number
from svc_monitor.mcp.tools.spec import Limited, Scoped, ToolSpec
from svc_monitor.mcp.untrusted import block


async def memory_stats(api: ApiCaller, params: Scoped) -> str:
    stats = await api.get("/api/metrics/memory/stats", connection=params.connection)
    lines = [
        f"allocated {mb(stats.get('total.allocated'))} (peak {mb(stats.get('peak.allocated'))},"
        f" {_pct(stats.get('peak.percentage'))} of peak)",
        f"dataset {mb(stats.get('dataset.bytes'))} ({_pct(stats.get('dataset.percentage'))}"
        f" of net memory), overhead {mb(stats.get('overhead.total'))}",
        f"keys {number(stats.get('keys.count'))},"
        f" {number(stats.get('keys.bytes-per-key'))} bytes per key",
        f"clients {mb(stats.get('clients.normal'))}, replicas' buffers"
        f" {mb(stats.get('clients.slaves'))}, replication backlog"
        f" {mb(stats.get('replication.backlog'))}, AOF buffer {mb(stats.get('aof.buffer'))}",
        f"fragmentation {number(stats.get('fragmentation'))}"
        f" ({mb(stats.get('fragmentation.bytes'))}),"
        f" allocator fragmentation {number(stats.get('allocator-fragmentation.ratio'))}",
    ]
    return "\n".join(lines)


def _pct(value: Any) -> str:
    return f"{value:.1f}%" if isinstance(value, int | float) else "unknown"


async def memory_doctor(api: ApiCaller, params: Scoped) -> str:
    report = await api.get("/api/metrics/memory/doctor", connection=params.connection)
    return f"MEMORY DOCTOR:\n{block(report.get('report'), limit=REPORT_CHARS)}"


async def memory_history(api: ApiCaller, params: Limited) -> str:
    snapshots = await api.get(
        "/api/memory-analytics/snapshots",
        connection=params.connection,
        params={"limit": str(params.limit)},
    )

    def line(s: dict[str, Any]) -> str:
        used, limit = figure(s.get("usedMemory")), figure(s.get("maxmemory"))
        ratio = f" ({used / limit:.0%} of {mb(limit)})" if used is not None and limit else ""
        return (
            f"{iso(s.get('capturedAt'))}: used {mb(used)}{ratio},"
            f" RSS {mb(s.get('usedMemoryRss'))},"
            f" fragmentation {number(s.get('memFragmentationRatio'))}"
        )

    return listing("Memory snapshots", snapshots, line, limit=params.limit)


TOOLS = [
    ToolSpec(
        "memory_stats",
        "MEMORY STATS in MB: allocated and peak, dataset and overhead, per-key cost, "
        "client and replication buffers, fragmentation.",
        memory_stats,
    ),
    ToolSpec("memory_doctor", "The server's own MEMORY DOCTOR report.", memory_doctor),
    ToolSpec(
        "memory_history",
        "Stored memory snapshots over time: used memory (MB and ratio to maxmemory), RSS, "
        "fragmentation.",
        memory_history,
        Limited,
    ),
]
