"""Bodies of the latency history routes."""

from pydantic import BaseModel, Field


class LatencySnapshotRead(BaseModel):
    """A latency event as LATENCY LATEST showed it when its latest spike moved."""

    id: int
    capturedAt: int = Field(description="epoch ms of the poll")
    eventName: str
    latestEventAt: int = Field(description="epoch ms of the event's latest spike")
    latestMs: int
    maxMs: int


class HistogramEntry(BaseModel):
    """One command's calls and its histogram: key = bucket upper bound in usec, value = calls
    at or under it (cumulative, as the engine reports it)."""

    calls: int
    histogram: dict[str, int]


class LatencyHistogramRead(BaseModel):
    """LATENCY HISTOGRAM of every command, as one poll saw it."""

    id: int
    capturedAt: int = Field(description="epoch ms of the poll")
    data: dict[str, HistogramEntry]
