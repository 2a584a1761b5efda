"""Bodies of the client analytics routes and of the live client routes.

Every timestamp is epoch ms; client age and idle keep the engine's unit, seconds, and
say so in their names.
"""

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

ClientType = Literal["normal", "master", "replica", "pubsub"]
GroupBy = Literal["name", "user", "addr"]


class ClientFields(BaseModel):
    """The CLIENT LIST fields both live reads and snapshots carry; null when not reported."""

    clientId: int | None = Field(description="the server's client id")
    addr: str | None
    laddr: str | None
    name: str | None
    user: str | None
    db: int | None
    cmd: str | None = Field(description="last command run")
    ageSeconds: int | None
    idleSeconds: int | None
    flags: str | None
    sub: int | None
    psub: int | None
    multi: int | None
    qbuf: int | None = Field(description="query buffer bytes")
    qbufFree: int | None
    obl: int | None = Field(description="output buffer bytes")
    oll: int | None = Field(description="output list length")
    omem: int | None = Field(description="output memory bytes")
    totMem: int | None
    libName: str | None


class ClientSnapshot(ClientFields):
    """One client as one CLIENT LIST poll saw it."""

    id: int
    capturedAt: int = Field(description="epoch ms")


class LiveClient(ClientFields):
    """One connected client, read live; `extra` holds every field not typed here."""

    extra: dict[str, str]


class Killed(BaseModel):
    killed: int = Field(description="connections closed")


class Pruned(BaseModel):
    pruned: int = Field(description="snapshots deleted")


class TimeRange(BaseModel):
    earliest: int = Field(description="epoch ms")
    latest: int = Field(description="epoch ms")


class ConnectionPoint(BaseModel):
    """Connection counts of the polls within one bucket."""

    t: int = Field(description="bucket start, epoch ms")
    captures: int = Field(description="CLIENT LIST polls in the bucket")
    maxConnections: int
    avgConnections: float
    byName: dict[str, int] = Field(description="most connections per client name in one poll")
    byUser: dict[str, int] = Field(description="most connections per user in one poll")


class ConnectionSeries(BaseModel):
    """Connection counts over time, in buckets of `bucketMs` (empty buckets left out)."""

    model_config = ConfigDict(populate_by_name=True)

    from_: int = Field(alias="from")
    to: int
    bucketMs: int
    points: list[ConnectionPoint]


class GroupCount(BaseModel):
    key: str = Field(description="client name, user or IP; empty when the client set none")
    current: int = Field(description="connections at the latest poll")
    peak: int = Field(description="most connections in one poll")


class ClientStats(BaseModel):
    """A summary of the stored snapshots within the window."""

    captures: int
    currentConnections: int = Field(description="clients at the latest poll")
    latestCapturedAt: int | None
    peakConnections: int
    peakAt: int | None
    uniqueNames: int
    uniqueUsers: int
    uniqueIps: int
    byName: list[GroupCount]
    byUser: list[GroupCount]
    timeRange: TimeRange | None


class CommandShare(BaseModel):
    identifier: str
    commands: dict[str, int] = Field(description="snapshots per last command")
    totalCommands: int
    topCommand: str | None
    sharePercent: float = Field(description="share of all snapshots in the window")


class CommandDistribution(BaseModel):
    """Which commands each client group was last seen running."""

    model_config = ConfigDict(populate_by_name=True)

    from_: int = Field(alias="from")
    to: int
    groupBy: GroupBy
    totalSnapshots: int
    distribution: list[CommandShare]


class IdleConnection(BaseModel):
    clientId: int | None
    addr: str | None
    name: str | None
    user: str | None
    avgIdleSeconds: float
    maxIdleSeconds: int
    occurrences: int = Field(description="polls that saw it idle past the threshold")
    firstSeen: int = Field(description="epoch ms")
    lastSeen: int = Field(description="epoch ms")
    recommendation: str


class IdleConnections(BaseModel):
    """Connections repeatedly seen idle for long: candidates for pool tuning or CLIENT KILL."""

    thresholdSeconds: int
    connections: list[IdleConnection]


class BufferAnomaly(BaseModel):
    snapshot: ClientSnapshot
    severity: Literal["warning", "critical"] = Field(
        description="critical past ten times a threshold"
    )
    reasons: list[str]


class BufferStats(BaseModel):
    avgQbuf: float | None
    maxQbuf: int | None
    avgOmem: float | None
    maxOmem: int | None


class BufferAnomalies(BaseModel):
    """Snapshots with a query buffer or output memory past the thresholds, newest first."""

    qbufThreshold: int
    omemThreshold: int
    anomalies: list[BufferAnomaly]
    stats: BufferStats


class ActivityBucket(BaseModel):
    t: int = Field(description="bucket start, epoch ms")
    captures: int
    uniqueClients: int
    maxConnections: int
    commands: dict[str, int] = Field(description="snapshots per last command")
    avgIdleSeconds: float | None
    maxQbuf: int | None
    maxOmem: int | None


class ActivityTimeline(BaseModel):
    """Client activity per bucket; `truncated` when the window held more rows than analysed."""

    bucketMs: int
    buckets: list[ActivityBucket]
    truncated: bool


class Contributor(BaseModel):
    name: str
    connections: int


class Spike(BaseModel):
    t: int = Field(description="bucket start, epoch ms")
    connections: int = Field(description="most connections in one poll of the bucket")
    baseline: float
    deviation: float = Field(description="standard deviations above the mean")
    topNames: list[Contributor]


class SpikeBaseline(BaseModel):
    mean: float
    stdDev: float
    buckets: int


class SpikeDetection(BaseModel):
    """Buckets whose connection count rose past max(mean + k*stdDev, 1.5 * mean)."""

    bucketMs: int
    sensitivity: float
    baseline: SpikeBaseline
    spikes: list[Spike]
