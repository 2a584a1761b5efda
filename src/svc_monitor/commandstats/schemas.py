"""Bodies of the commandstats routes."""

from pydantic import BaseModel, Field


class CommandStatRead(BaseModel):
    """One command's absolute counters at the latest poll (since the server's last reset)."""

    command: str
    calls: int
    usec: int | None = Field(description="null for a push connection that sends no cmd.usec")
    usecPerCall: float | None = Field(description="null when usec is")
    rejectedCalls: int | None = Field(
        default=None,
        description="null where the engine does not report it; absent for push connections "
        "(the Collector has no such metric)",
    )
    failedCalls: int | None = Field(default=None, description="as rejectedCalls")
    capturedAt: int = Field(description="epoch ms of the poll")


class CommandStatSample(CommandStatRead):
    """A stored sample: the counters, and how far they moved since the previous poll."""

    id: int
    callsDelta: int
    usecDelta: int | None = Field(description="null when usec is")
    intervalMs: int = Field(description="time since the previous poll, ms")
