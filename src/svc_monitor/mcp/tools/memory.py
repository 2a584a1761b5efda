"""MEMORY STATS, MEMORY DOCTOR and the stored memory history."""

from typing import Any

from svc_monitor.mcp.api_caller import ApiCaller
from svc_monitor.mcp.output import cap, iso, listing, mb, number
from svc_monitor.mcp.tools.spec import Limited, Scoped, ToolSpec


async def memory_stats(api: ApiCaller, params: Scoped) -> str:
    stats = await api.get("/api/metrics/memory/stats", connection=params.connection)
    lines = [
        f"allocated {mb(stats.get('total.allocated'))} (peak {mb(stats.get('peak.allocated'))},"
        f" {_pct(stats.get('peak.percentage'))} of peak)",
        f"dataset {mb(stats.get('dataset.bytes'))} ({_pct(stats.get('dataset.percentage'))}"
        f" of net memory), overhead {mb(stats.get('overhead.total'))}",
        f"keys {stats.get('keys.count')}, {stats.get('keys.bytes-per-key')} bytes per key",
        f"clients {mb(stats.get('clients.normal'))}, replicas' buffers"
        f" {mb(stats.get('clients.slaves'))}, replication backlog"
        f" {mb(stats.get('replication.backlog'))}, AOF buffer {mb(stats.get('aof.buffer'))}",
        f"fragmentation {number(stats.get('fragmentation'))}"
        f" ({mb(stats.get('fragmentation.bytes'))}),"
        f" allocator fragmentation {stats.get('allocator-fragmentation.ratio')}",
    ]
    return "\n".join(lines)


def _pct(value: Any) -> str:
    return f"{value:.1f}%" if isinstance(value, int | float) else "unknown"


async def memory_doctor(api: ApiCaller, params: Scoped) -> str:
    report = await api.get("/api/metrics/memory/doctor", connection=params.connection)
    return cap(f"MEMORY DOCTOR:\n{report.get('report', '').strip()}")


async def memory_history(api: ApiCaller, params: Limited) -> str:
    snapshots = await api.get(
        "/api/memory-analytics/snapshots",
        connection=params.connection,
        params={"limit": str(params.limit)},
    )

    def line(s: dict[str, Any]) -> str:
        limit = s.get("maxmemory") or 0
        ratio = f" ({s['usedMemory'] / limit:.0%} of {mb(limit)})" if limit else ""
        return (
            f"{iso(s.get('capturedAt'))}: used {mb(s.get('usedMemory'))}{ratio},"
            f" RSS {mb(s.get('usedMemoryRss'))}, fragmentation {s.get('memFragmentationRatio')}"
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
