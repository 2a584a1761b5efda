"""Cluster nodes, per-node stats, slot stats and the merged slow log."""

from typing import Any, Literal

from pydantic import Field

from svc_monitor.mcp.api_caller import ApiCaller
from svc_monitor.mcp.output import args_line, iso, listing, pairs
from svc_monitor.mcp.tools.spec import Limited, ToolSpec


class SlotParams(Limited):
    order_by: Literal["key-count", "cpu-usec", "network-bytes-in", "network-bytes-out"] = Field(
        default="key-count", description="Rank the slots by this figure"
    )


def _row(row: dict[str, Any]) -> str:
    return pairs({k: v for k, v in row.items() if not isinstance(v, dict | list)})


async def cluster_nodes(api: ApiCaller, params: Limited) -> str:
    nodes = await api.get("/api/metrics/cluster/nodes", connection=params.connection)
    return listing("Cluster nodes", nodes, _row, limit=params.limit)


async def cluster_node_stats(api: ApiCaller, params: Limited) -> str:
    stats = await api.get("/api/metrics/cluster/node-stats", connection=params.connection)
    rows = stats.get("nodes", stats) if isinstance(stats, dict) else stats
    return listing("Per-node stats", rows, _row, limit=params.limit)


async def cluster_slot_stats(api: ApiCaller, params: SlotParams) -> str:
    found = await api.get(
        "/api/metrics/cluster/slot-stats",
        connection=params.connection,
        params={"orderBy": params.order_by, "limit": str(params.limit)},
    )
    rows = found.get("slots", found) if isinstance(found, dict) else found
    return listing(f"Slots by {params.order_by}", rows, _row, limit=params.limit)


async def cluster_slowlog(api: ApiCaller, params: Limited) -> str:
    entries = await api.get(
        "/api/metrics/cluster/slowlog",
        connection=params.connection,
        params={"count": str(params.limit)},
    )
    rows = entries.get("entries", entries) if isinstance(entries, dict) else entries

    def line(e: dict[str, Any]) -> str:
        return (
            f"{iso(e.get('startedAt'))} {e.get('node') or e.get('nodeAddress') or '?'}"
            f" {e.get('duration')} us {args_line(e.get('args') or e.get('command'))}"
        )

    return listing("Slow log of every node, newest first (microseconds)", rows, line)


TOOLS = [
    ToolSpec(
        "cluster_nodes", "The cluster's nodes: role, address, slots, state.", cluster_nodes, Limited
    ),
    ToolSpec(
        "cluster_node_stats",
        "Per-node figures of a cluster (memory, ops/s, clients) to spot a hot or full node.",
        cluster_node_stats,
        Limited,
    ),
    ToolSpec(
        "cluster_slot_stats",
        "The busiest slots (CLUSTER SLOT-STATS) by keys, CPU or network bytes.",
        cluster_slot_stats,
        SlotParams,
    ),
    ToolSpec(
        "cluster_slowlog",
        "The slow logs of every node of a cluster, merged, newest first.",
        cluster_slowlog,
        Limited,
    ),
]
