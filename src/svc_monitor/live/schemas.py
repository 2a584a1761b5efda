"""Bodies of the live-read metrics routes (latency, memory, role, cluster, config, keys)."""

from typing import Literal

from pydantic import BaseModel, Field, RootModel

Scalar = int | float | str


class LatencyReset(BaseModel):
    """The engine accepted the reset."""

    success: Literal[True] = True


class Report(BaseModel):
    """A human-readable analysis written by the engine itself."""

    report: str


class LatencyEventRead(BaseModel):
    """One event of LATENCY LATEST."""

    eventName: str
    timestamp: int = Field(description="latest spike, epoch ms (the engine keeps seconds)")
    latestMs: int = Field(description="latency of the latest spike, ms")
    maxMs: int = Field(description="worst spike since the last reset, ms")


class LatencyHistoryPoint(BaseModel):
    """One spike of LATENCY HISTORY."""

    timestamp: int = Field(description="epoch ms (the engine keeps seconds)")
    latencyMs: int


class CommandHistogramRead(BaseModel):
    """Calls of one command and its latency histogram: key = bucket upper bound in usec
    (powers of two), value = calls at or under it (cumulative, as the engine reports it)."""

    calls: int
    histogram: dict[str, int]


class MemoryStatsRead(RootModel[dict[str, Scalar | dict[str, Scalar]]]):
    """MEMORY STATS as an object; per-database entries (`db.0`) are nested objects."""


class RoleReplicaRead(BaseModel):
    """A replica as its primary reports it in ROLE."""

    ip: str
    port: int
    offset: int


class RoleRead(BaseModel):
    """ROLE, parsed. Fields that do not apply to the role are null."""

    role: Literal["master", "slave", "sentinel"]
    replicationOffset: int | None = Field(None, description="master: its offset")
    replicas: list[RoleReplicaRead] = Field(default_factory=list)
    masterHost: str | None = None
    masterPort: int | None = None
    masterLinkState: str | None = Field(
        None, description="slave: connect, connecting, sync or connected"
    )
    masterReplicationOffset: int | None = Field(None, description="slave: offset received")
    monitoredMasters: list[str] = Field(default_factory=list, description="sentinel only")


class ConfigValues(RootModel[dict[str, str]]):
    """Configuration parameter -> value, as CONFIG GET answers."""


class ConfigParameterRead(BaseModel):
    """One configuration parameter."""

    parameter: str
    value: str


class DbSizeRead(BaseModel):
    """Keys in the connection's database."""

    size: int


class LastSaveRead(BaseModel):
    """When the last successful RDB save happened."""

    timestamp: int = Field(description="epoch ms")
