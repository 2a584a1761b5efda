"""Cluster page: the cluster the chosen connection belongs to.

Health (CLUSTER INFO), every node (CLUSTER NODES), the topology as primaries with their
replicas, the nodes' polled stats side by side (`/api/metrics/cluster/node-stats`), and
on Valkey 8.0+ a heatmap of CLUSTER SLOT-STATS over all 16384 slots. The reads are the
LiveService and ClusterService calls behind the API's cluster routes. A server
with cluster mode off gets one plain sentence saying so: that is a setup, not an error.
"""

from dataclasses import dataclass
from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import HTMLResponse

from svc_monitor.cluster.schemas import (
    ClusterInfoRead,
    ClusterNodeRead,
    ClusterNodeStats,
    SlotStatsRead,
)
from svc_monitor.cluster.service import ClusterNotDiscovered
from svc_monitor.connections.models import Connection
from svc_monitor.engine.capabilities import EngineIdentity
from svc_monitor.engine.cluster import SLOT_COUNT
from svc_monitor.web.dependencies import Ui, UiDep
from svc_monitor.web.live import pushed
from svc_monitor.web.pages import Page
from svc_monitor.web.sections import Section, load

PAGE = Page("cluster", "/cluster", "Cluster", live_only=True)
router = APIRouter(include_in_schema=False)

STANDALONE = "Standalone mode: this server is not a cluster node (cluster-enabled no)"
SLOT_STATS_REQUIREMENT = "CLUSTER SLOT-STATS needs Valkey 8.0 or newer"
# 16384 slots in 256 cells of 64: one cell per pixel column on a phone is still legible,
# and a cell is a contiguous slot range, so a hot range shows where it sits.
HEAT_CELLS = 256
HEAT_LEVELS = 10  # CSS classes heat-0 (nothing) .. heat-9 (the busiest cell)
TOP_SLOTS = 10
# A node's slot ranges beyond this many are summarised (a resharded cluster has hundreds).
RANGES_SHOWN = 8
REFRESH_MS = 5_000


@dataclass(frozen=True, slots=True)
class Metric:
    key: str  # the SLOT-STATS record field
    label: str
    unit: str  # how the template formats it: number | us


METRICS = {
    "keys": Metric("key_count", "Keys", "number"),
    "cpu": Metric("cpu_usec", "CPU time", "us"),
}


@dataclass(frozen=True, slots=True)
class NodeRow:
    """One line of CLUSTER NODES as the nodes table and the topology show it."""

    node: ClusterNodeRead
    role: str  # primary | replica | other
    primary: ClusterNodeRead | None  # a replica's primary, when known
    slot_count: int

    @property
    def short_id(self) -> str:
        return self.node.id[:8]

    @property
    def ranges(self) -> list[str]:
        return [str(a) if a == b else f"{a}-{b}" for a, b in self.node.slots]


@dataclass(frozen=True, slots=True)
class Shard:
    primary: NodeRow
    replicas: list[NodeRow]


@dataclass(frozen=True, slots=True)
class Topology:
    rows: list[NodeRow]  # primaries by first slot, each followed by its replicas
    shards: list[Shard]
    others: list[NodeRow]  # nodes in handshake, or replicas of an unknown primary


@dataclass(frozen=True, slots=True)
class HeatCell:
    first: int
    last: int
    value: int
    level: int


@dataclass(frozen=True, slots=True)
class Heatmap:
    metric: Metric
    cells: list[HeatCell]
    total: int
    slots_reported: int
    top: list[tuple[int, int]]  # (slot, value) of the busiest slots


@dataclass(frozen=True, slots=True)
class Comparison:
    """Node stats with each node's share of the largest value, for the bars."""

    nodes: list[ClusterNodeStats]
    max_memory: int
    max_ops: int
    max_clients: int


@dataclass(frozen=True, slots=True)
class ClusterView:
    standalone: bool
    # The engine has not answered yet: whether it is a cluster node is not known.
    waiting: bool
    info: Section[ClusterInfoRead]
    topology: Section[Topology]
    stats: Section[Comparison]  # value None: the nodes are not polled yet


def topology(nodes: list[ClusterNodeRead]) -> Topology:
    by_id = {n.id: n for n in nodes}

    def row(node: ClusterNodeRead) -> NodeRow:
        if "master" in node.flags:
            role = "primary"
        elif "slave" in node.flags:
            role = "replica"
        else:
            role = "other"
        primary = by_id.get(node.master) if node.master else None
        count = sum(b - a + 1 for a, b in node.slots)
        return NodeRow(node, role, primary, count)

    rows = [row(n) for n in nodes]
    primaries = sorted(
        (r for r in rows if r.role == "primary"),
        key=lambda r: (not r.node.slots, r.node.slots[0][0] if r.node.slots else 0, r.node.address),
    )
    shards = [
        Shard(p, sorted((r for r in rows if r.primary is p.node), key=lambda r: r.node.address))
        for p in primaries
    ]
    placed = {id(r) for s in shards for r in (s.primary, *s.replicas)}
    others = [r for r in rows if id(r) not in placed]
    ordered = [r for s in shards for r in (s.primary, *s.replicas)] + others
    return Topology(ordered, shards, others)


def heatmap(stats: SlotStatsRead, metric: Metric) -> Heatmap:
    per_slot = [0] * SLOT_COUNT
    for slot, record in stats.root.items():
        number = int(slot)
        if 0 <= number < SLOT_COUNT:
            # A metric the server does not track (null) adds nothing; the page says why.
            per_slot[number] = int(getattr(record, metric.key) or 0)
    width = SLOT_COUNT // HEAT_CELLS
    sums = [sum(per_slot[i : i + width]) for i in range(0, SLOT_COUNT, width)]
    peak = max(sums)
    cells = [
        HeatCell(i * width, (i + 1) * width - 1, value, _level(value, peak))
        for i, value in enumerate(sums)
    ]
    busiest = sorted(
        ((slot, value) for slot, value in enumerate(per_slot) if value), key=lambda t: -t[1]
    )
    return Heatmap(metric, cells, sum(sums), len(stats.root), busiest[:TOP_SLOTS])


def _level(value: int, peak: int) -> int:
    """heat-0 for an empty cell, then nine steps up to the busiest cell."""
    if value <= 0 or peak <= 0:
        return 0
    return min(HEAT_LEVELS - 1, 1 + (HEAT_LEVELS - 2) * value // peak)


def slot_stats_requirement(identity: EngineIdentity | None) -> Section[None] | None:
    if identity is None or identity.capabilities.has_slot_stats:
        return None
    return Section.unsupported(
        f"{SLOT_STATS_REQUIREMENT}. This instance is "
        f"{identity.type.capitalize()} {identity.version}."
    )


async def read_cluster(ui: Ui, connection: Connection) -> ClusterView:
    identity = ui.shell.identity
    if identity is None or not identity.cluster_enabled:
        # Until the engine answers, asking it here would hold the page for a connect
        # timeout whenever it is down; the connection banner says which it is.
        return ClusterView(identity is not None, identity is None, Section(), Section(), Section())
    clusters = ui.features.cluster
    info = await load(clusters.cluster_info(connection))
    nodes = await load(clusters.cluster_nodes(connection))
    shape: Section[Topology] = Section(problem=nodes.problem, message=nodes.message)
    if nodes.value is not None:
        shape = Section(value=topology([_addressed(n, connection) for n in nodes.value]))
    order = [r.node.address for r in shape.value.rows] if shape.value is not None else []
    return ClusterView(False, False, info, shape, _comparison(ui, connection, order))


def _addressed(node: ClusterNodeRead, connection: Connection) -> ClusterNodeRead:
    """A node that has never met another announces itself as `:port`; it is the seed."""
    if node.host or "myself" not in node.flags:
        return node
    host = connection.host
    address = f"[{host}]:{connection.port}" if ":" in host else f"{host}:{connection.port}"
    return node.model_copy(update={"host": connection.host, "address": address})


def _comparison(ui: Ui, connection: Connection, order: list[str]) -> Section[Comparison]:
    try:
        rows = ui.features.cluster.node_stats(connection)
    except ClusterNotDiscovered:
        return Section()  # the first cluster poll has not run: nothing polled to compare
    # In the nodes table's order (each primary, then its replicas), to read across both.
    place = {address: i for i, address in enumerate(order)}
    rows.sort(key=lambda n: (place.get(n.address, len(place)), n.address))
    return Section(
        value=Comparison(
            rows,
            max((n.usedMemory or 0 for n in rows), default=0),
            max((n.opsPerSec or 0 for n in rows), default=0),
            max((n.connectedClients or 0 for n in rows), default=0),
        )
    )


async def read_heatmap(ui: Ui, connection: Connection, metric: Metric) -> Section[Heatmap]:
    identity = ui.shell.identity
    if identity is None:
        return Section()  # the engine has not answered: the banner says why
    if not identity.cluster_enabled:
        return Section.unsupported(STANDALONE)
    requirement = slot_stats_requirement(identity)
    if requirement is not None:
        return Section(problem=requirement.problem, message=requirement.message)
    # Every slot, whatever the order: each primary answers for the slots it owns.
    stats = await load(
        ui.features.cluster.slot_stats(connection, order_by="key-count", limit=SLOT_COUNT)
    )
    if stats.value is None:
        return Section(problem=stats.problem, message=stats.message)
    return Section(value=heatmap(stats.value, metric))


MetricKey = Annotated[str | None, Query()]


def _metric(key: str | None) -> str:
    return key if key in METRICS else "keys"


@router.get("/cluster")
async def cluster_page(ui: UiDep, metric: MetricKey = None) -> HTMLResponse:
    chosen = _metric(metric)
    connection = ui.shell.connection
    view = slots = None
    if connection is not None and not connection.pushed:
        view = await read_cluster(ui, connection)
        if not view.standalone:
            # All 16384 slots' stats take a few hundred ms to read and parse on a large
            # cluster: the page asks for them once it is shown (slots stays a pending
            # Section), unless the engine lacks them and the answer is known already.
            requirement = slot_stats_requirement(ui.shell.identity)
            slots = Section() if requirement is None else requirement
    return ui.page(
        PAGE,
        "cluster/page.html",
        view=view,
        slots=slots,
        chosen=chosen,
        metrics=METRICS,
        standalone=STANDALONE,
        refresh_ms=REFRESH_MS,
        ranges_shown=RANGES_SHOWN,
    )


@router.get("/ui/cluster/live")
async def cluster_live(ui: UiDep) -> HTMLResponse:
    """Health, nodes, topology and node stats alone, which the page refreshes."""
    if pushed(ui.shell):
        return ui.fragment("shell/needs_live.html")
    connection = ui.shell.connection
    view = None if connection is None else await read_cluster(ui, connection)
    return ui.fragment(
        "cluster/live.html", view=view, standalone=STANDALONE, ranges_shown=RANGES_SHOWN
    )


@router.get("/ui/cluster/slots")
async def cluster_slots(ui: UiDep, metric: MetricKey = None) -> HTMLResponse:
    """The slot heatmap for one metric (the page's metric tabs load it)."""
    if pushed(ui.shell):
        return ui.fragment("shell/needs_live.html")
    chosen = _metric(metric)
    connection = ui.shell.connection
    slots = None if connection is None else await read_heatmap(ui, connection, METRICS[chosen])
    return ui.fragment("cluster/slots.html", slots=slots, chosen=chosen, metrics=METRICS)
