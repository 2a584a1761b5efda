"""Parse CLUSTER INFO, CLUSTER NODES and CLUSTER SLOT-STATS replies: pure functions, no I/O.

CLUSTER NODES is one line per node (https://valkey.io/commands/cluster-nodes/):

    <id> <ip:port@cport[,hostname]> <flags> <master> <ping-sent> <pong-recv> <config-epoch>
    <link-state> <slot> <slot> ... <slot>

where a slot is `N`, `A-B`, `[N->-<node id>]` (migrating to) or `[N-<-<node id>]` (importing
from). Valkey 8+ may append further `,key=value` address extras (`shard-id=`, `tls-port=`);
only the first extra without `=` is taken as the hostname. Malformed lines are skipped.
"""

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from svc_monitor.engine.reply_values import integer, pairs, text

SLOT_COUNT = 16384


@dataclass(frozen=True, slots=True)
class SlotMove:
    """A slot on the move: migrating to, or importing from, `node`."""

    slot: int
    node: str


@dataclass(frozen=True, slots=True)
class ClusterNode:
    """One line of CLUSTER NODES."""

    id: str
    address: str  # host:port clients use
    host: str
    port: int
    bus_port: int | None
    hostname: str | None
    flags: list[str]
    master: str | None  # the primary's id for a replica
    ping_sent: int
    pong_received: int
    config_epoch: int
    link_state: str
    slots: list[tuple[int, int]] = field(default_factory=list)
    migrating: list[SlotMove] = field(default_factory=list)
    importing: list[SlotMove] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class SlotStats:
    """One slot of CLUSTER SLOT-STATS; a metric the engine did not report is None."""

    slot: int
    key_count: int | None = None
    expires_count: int | None = None
    total_reads: int | None = None
    total_writes: int | None = None
    cpu_usec: int | None = None


def parse_cluster_info(reply: Any) -> dict[str, int | str]:
    """CLUSTER INFO `name:value` lines; integers become int, anything else stays text."""
    result: dict[str, int | str] = {}
    for line in text(reply).splitlines():
        name, sep, value = line.partition(":")
        name, value = name.strip(), value.strip()
        if sep and name:
            number = integer(value) if value.lstrip("-").isdigit() else None
            result[name] = number if number is not None else value
    return result


def parse_cluster_nodes(reply: Any) -> list[ClusterNode]:
    nodes: list[ClusterNode] = []
    for line in text(reply).splitlines():
        node = _parse_node(line.split())
        if node is not None:
            nodes.append(node)
    return nodes


def _parse_node(parts: list[str]) -> ClusterNode | None:
    if len(parts) < 8:
        return None
    numbers = [integer(p) for p in parts[4:7]]
    address = _parse_address(parts[1])
    if address is None or any(n is None for n in numbers):
        return None
    ping, pong, epoch = (n for n in numbers if n is not None)
    host, port, bus_port, hostname = address
    node = ClusterNode(
        id=parts[0],
        address=f"[{host}]:{port}" if ":" in host else f"{host}:{port}",
        host=host,
        port=port,
        bus_port=bus_port,
        hostname=hostname,
        flags=[f for f in parts[2].split(",") if f],
        master=None if parts[3] == "-" else parts[3],
        ping_sent=ping,
        pong_received=pong,
        config_epoch=epoch,
        link_state=parts[7],
    )
    for token in parts[8:]:
        _add_slot(node, token)
    return node


def _parse_address(token: str) -> tuple[str, int, int | None, str | None] | None:
    endpoint, _, extras = token.partition(",")
    hostport, _, bus = endpoint.partition("@")
    host, sep, port_text = hostport.rpartition(":")
    port = integer(port_text)
    if not sep or port is None:
        return None
    hostname = next((e for e in extras.split(",") if e and "=" not in e), None)
    return host.strip("[]"), port, integer(bus) if bus else None, hostname


def _add_slot(node: ClusterNode, token: str) -> None:
    if token.startswith("[") and token.endswith("]"):
        inner = token[1:-1]
        for marker, moves in (("->-", node.migrating), ("-<-", node.importing)):
            slot_text, found, other = inner.partition(marker)
            slot = integer(slot_text)
            if found and slot is not None:
                moves.append(SlotMove(slot, other))
        return
    first, _, last = token.partition("-")
    start, end = integer(first), integer(last or first)
    if start is not None and end is not None and 0 <= start <= end < SLOT_COUNT:
        node.slots.append((start, end))


# CLUSTER SLOT-STATS metric names -> SlotStats fields. Valkey 8.0 reports key-count, and
# cpu-usec / network-bytes-* only with `cluster-slot-stats-enabled yes`.
_METRICS = {
    "key-count": "key_count",
    "expires-count": "expires_count",
    "total-reads": "total_reads",
    "total-writes": "total_writes",
    "cpu-usec": "cpu_usec",
}


def parse_slot_stats(reply: Any) -> list[SlotStats]:
    """`[[slot, [metric, value ...]] ...]` in the server's order (the ORDERBY order)."""
    result: list[SlotStats] = []
    for item in reply if isinstance(reply, list) else []:
        if not isinstance(item, list) or len(item) < 2:
            continue
        slot = integer(item[0])
        if slot is None:
            continue
        values: dict[str, int | None] = {}
        for name, value in pairs(item[1]):
            if name in _METRICS:
                values[_METRICS[name]] = integer(value)
        result.append(SlotStats(slot, **values))
    return result


def top_slot_stats(replies: Iterable[Any], *, order_by: str, limit: int) -> list[SlotStats]:
    """CLUSTER SLOT-STATS replies of several primaries (each reports only its own slots)
    merged: the `limit` slots with most keys (or most CPU for order_by=cpu-usec), ties by
    slot number. The cluster's top `limit` is within the union of every primary's top
    `limit`."""
    stats = [s for reply in replies for s in parse_slot_stats(reply)]
    metric = "cpu_usec" if order_by == "cpu-usec" else "key_count"
    stats.sort(key=lambda s: (-(getattr(s, metric) or 0), s.slot))
    return stats[:limit]
