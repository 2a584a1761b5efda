"""Bodies of the cluster-wide routes."""

from typing import Literal

from pydantic import BaseModel, Field, RootModel

Role = Literal["primary", "replica", "unknown"]


class ClusterNodeStats(BaseModel):
    """One node of the cluster as last polled (role from the node's own INFO)."""

    id: str
    address: str = Field(description="host:port")
    role: Role
    primaryId: str | None
    slots: int = Field(description="slots this node serves")
    status: Literal["up", "down", "unknown"]
    error: str | None = None
    polledAt: int | None = Field(default=None, description="epoch ms of its last INFO")
    version: str | None = None
    usedMemory: int | None = None
    opsPerSec: int | None = None
    connectedClients: int | None = None
    replicationOffset: int | None = None
    masterLinkStatus: str | None = None


class ClusterLogEntry(BaseModel):
    """A slow log or command log entry of one node, in a log merged across the cluster."""

    node: str = Field(description="host:port of the node that logged it")
    nodeId: str | None
    id: int
    timestamp: int = Field(description="epoch ms the command started")
    duration: int = Field(description="microseconds (slow), or bytes (large-request/-reply)")
    command: list[str]
    clientAddress: str | None
    clientName: str | None


class ClusterClient(BaseModel):
    """A client connected to one node, in a list merged across the cluster."""

    node: str = Field(description="host:port of the node it is connected to")
    nodeId: str | None
    id: int | None
    addr: str | None
    name: str | None
    user: str | None
    db: int | None
    cmd: str | None
    ageSeconds: int | None
    idleSeconds: int | None
    flags: str | None


# --- the seed's live cluster reads (GET /api/metrics/cluster/info, /nodes, /slot-stats) ---


class ClusterInfoRead(RootModel[dict[str, int | str]]):
    """CLUSTER INFO as an object (`cluster_state`, `cluster_known_nodes` ...)."""


class SlotMoveRead(BaseModel):
    """A slot being migrated to (or imported from) another node."""

    slot: int
    nodeId: str


class ClusterNodeRead(BaseModel):
    """One node of CLUSTER NODES."""

    id: str
    address: str = Field(description="host:port clients use")
    host: str
    port: int
    busPort: int | None
    hostname: str | None
    flags: list[str]
    master: str | None = Field(description="id of the primary, for a replica")
    pingSent: int = Field(description="epoch ms, 0 when no ping is pending")
    pongReceived: int = Field(description="epoch ms")
    configEpoch: int
    linkState: str
    slots: list[tuple[int, int]] = Field(description="[start, end] ranges, inclusive")
    migratingSlots: list[SlotMoveRead]
    importingSlots: list[SlotMoveRead]


class SlotStatsRecord(BaseModel):
    """One slot's statistics. A metric the server did not report is null, never 0: Valkey
    reports only key_count unless `cluster-slot-stats-enabled yes`."""

    key_count: int | None
    expires_count: int | None
    total_reads: int | None
    total_writes: int | None
    cpu_usec: int | None


class SlotStatsRead(RootModel[dict[str, SlotStatsRecord]]):
    """Slot number (as a string) -> its statistics, in the requested order."""
