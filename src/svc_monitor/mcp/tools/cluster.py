"""Cluster nodes, per-node stats, slot stats and the merged slow log."""

from typing import Any, Literal

from pydantic import Field

from svc_monitor.mcp.api_caller import ApiCaller
from svc_monitor.mcp.output import iso, listing, mb, number
from svc_monitor.mcp.tools.spec import Limited, ToolSpec
from svc_monitor.mcp.untrusted import command_line, data


class SlotParams(Limited):
    order_by: Literal["key-count", "cpu-usec", "network-bytes-in", "network-bytes-out"] = Field(
        default="key-count", description="Rank the slots by this figure"
    )


def _node(n: dict[str, Any]) -> str:
    ranges = n.get("slots") or []
    served = sum(int(b) - int(a) + 1 for a, b in ranges)
    role = f"replica of {data(str(n['master'])[:12])}" if n.get("master") else "primary"
    return (
        f"{data(n.get('address'))} ({data(str(n.get('id'))[:12])}) {role},"
        f" {data(','.join(n.get('flags') or []))}, link {data(n.get('linkState'))},"
        f" {served} slots"
    )


def _node_stats(n: dict[str, Any]) -> str:
    link = f", link {data(n['masterLinkStatus'])}" if n.get("masterLinkStatus") else ""
    error = f", error: {data(n['error'])}" if n.get("error") else ""
    return (
        f"{data(n.get('address'))} {data(n.get('role'))} {n.get('status')}:"
        f" {number(n.get('slots'))} slots, used {mb(n.get('usedMemory'))},"
        f" {number(n.get('opsPerSec'), 'ops/s')}, {number(n.get('connectedClients'))} clients"
        f"{link}, polled {iso(n.get('polledAt'))}{error}"
    )


async def cluster_nodes(api: ApiCaller, params: Limited) -> str:
    nodes = await api.get("/api/metrics/cluster/nodes", connection=params.connection)
    return listing("Cluster nodes", nodes, _node, limit=params.limit)


async def cluster_node_stats(api: ApiCaller, params: Limited) -> str:
    stats = await api.get("/api/metrics/cluster/node-stats", connection=params.connection)
    return listing("Per-node stats", stats, _node_stats, limit=params.limit)


_SLOT_METRICS = (
    ("key_count", "keys"),
    ("expires_count", "with TTL"),
    ("total_reads", "reads"),
    ("total_writes", "writes"),
    ("cpu_usec", "us CPU"),
)


async def cluster_slot_stats(api: ApiCaller, params: SlotParams) -> str:
    found = await api.get(
        "/api/metrics/cluster/slot-stats",
        connection=params.connection,
        params={"orderBy": params.order_by, "limit": str(params.limit)},
    )
    rows = list(found.items())

    def line(row: tuple[str, dict[str, Any]]) -> str:
        slot, stats = row
        # A metric the server does not report is null: left out rather than shown as 0.
        said = [
            number(stats[name], unit) for name, unit in _SLOT_METRICS if stats.get(name) is not None
        ]
        shown = slot if slot.isdigit() else data(slot)
        return f"slot {shown}: {', '.join(said) or 'no metric reported'}"

    return listing(f"Slots by {params.order_by}", rows, line, limit=params.limit)


async def cluster_slowlog(api: ApiCaller, params: Limited) -> str:
    entries = await api.get(
        "/api/metrics/cluster/slowlog",
        connection=params.connection,
        params={"count": str(params.limit)},
    )

    def line(e: dict[str, Any]) -> str:
        who = e.get("clientName") or e.get("clientAddress")
        return (
            f"{iso(e.get('timestamp'))} {data(e.get('node'))} {number(e.get('duration'))} us"
            f" {command_line(e.get('command'))} from {data(who, missing='?')}"
        )

    return listing("Slow log of every node, newest first (microseconds)", entries, line)


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
