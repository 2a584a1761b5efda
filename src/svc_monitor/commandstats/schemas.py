"""Bodies of the commandstats routes."""

from pydantic import BaseModel, Field


class CommandStatRead(BaseModel):
    """One command's absolute counters at the latest poll (since the server's last reset)."""

    command: str
    calls: int
    usec: int
    usecPerCall: float
    rejectedCalls: int | None = Field(description="null where the engine does not report it")
    failedCalls: int | None = Field(description="null where the engine does not report it")
    capturedAt: int = Field(description="epoch ms of the poll")


class CommandStatSample(CommandStatRead):
    """A stored sample: the counters, and how far they moved since the previous poll."""

    id: int
    callsDelta: int
    usecDelta: int
    intervalMs: int = Field(description="time since the previous poll, ms")
