"""Bodies of the cluster-wide routes."""

from typing import Literal

from pydantic import BaseModel, Field

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
