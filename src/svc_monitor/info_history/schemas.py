"""Bodies of the metrics and history routes."""

from typing import Any

from pydantic import BaseModel, Field


class MemorySnapshot(BaseModel):
    """Memory of one instance at one time; null where the instance did not report a field."""

    id: int
    capturedAt: int = Field(description="epoch ms")
    usedMemory: int | None
    usedMemoryRss: int | None
    usedMemoryPeak: int | None
    memFragmentationRatio: float | None
    maxmemory: int | None
    allocatorFragRatio: float | None
    opsPerSec: int | None
    cpuSysPercent: float | None
    cpuUserPercent: float | None
    ioThreadedReads: int | None
    ioThreadedWrites: int | None


class HistoryPoint(BaseModel):
    """One chart point: the average of the samples in its bucket (null when none had it)."""

    t: int = Field(description="bucket start, epoch ms")
    samples: int
    opsPerSec: float | None
    connectedClients: float | None
    blockedClients: float | None
    usedMemory: float | None
    cpuSysPercent: float | None
    cpuUserPercent: float | None
    netInputKbps: float | None
    netOutputKbps: float | None
    hitRatio: float | None
    keys: float | None
    expires: float | None
    connectedReplicas: float | None


class HistorySeries(BaseModel):
    """Stats samples of one connection, downsampled to at most `maxPoints` buckets."""

    connectionId: str
    from_: int = Field(alias="from")
    to: int
    bucketMs: int
    points: list[HistoryPoint]

    model_config = {"populate_by_name": True}


class ParsedInfoRead(BaseModel):
    """INFO as sections of fields; composite fields (keyspace db0, cmdstat_get ...) are objects."""

    sections: dict[str, dict[str, Any]]
    rejectedValues: int = Field(
        0,
        description="INFO values the polls of this connection left out since start: a number "
        "past 64 bits, inf or nan where a number belongs (also svc_info_values_rejected_total)",
    )
    polledAt: dict[str, int] = Field(
        default_factory=dict,
        description="epoch ms the poller last read each section of the default INFO: every "
        "pass for the sections judged each second, with the full INFO (every "
        "fullInfoIntervalMs) for the others; empty for a push connection or before the "
        "first poll",
    )


class CommandLoad(BaseModel):
    command: str
    calls: int
    errors: int
    totalMs: float
    avgMs: float
    perMinute: float


class MonitorLoad(BaseModel):
    """The commands this monitor has sent one server since `since`, busiest first."""

    connectionId: str
    since: int = Field(description="epoch ms the counting started (service start or add)")
    totalCalls: int
    perMinute: float
    commands: list[CommandLoad]
