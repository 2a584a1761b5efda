"""Bodies of the audit trail routes and of the live ACL log."""

from typing import Literal

from pydantic import BaseModel, Field

AclReason = Literal["auth", "command", "key", "channel"]


class AuditEntry(BaseModel):
    """One ACL LOG entry as the monitor stored it; `count` grows while the server groups
    repeated denials into it."""

    id: int
    entryId: int | None = Field(description="the server's entry id; null before Redis 7.2")
    count: int
    reason: str = Field(description="auth, command, key or channel")
    context: str = Field(description="toplevel, multi, lua or module")
    object: str = Field(description="the command, key or channel denied (AUTH for auth)")
    username: str
    ageSeconds: float = Field(description="seconds since last update, when last polled")
    clientInfo: str = Field(description="CLIENT LIST line of the last client denied")
    timestampCreated: int = Field(
        description="epoch ms; estimated from the first sighting before Redis 7.2"
    )
    timestampLastUpdated: int = Field(description="epoch ms")
    capturedAt: int = Field(description="epoch ms when the monitor last saw this entry change")


class ReasonCount(BaseModel):
    """Stored entries and the denials they count."""

    entries: int
    events: int = Field(description="sum of the entries' counts")


class TimeRange(BaseModel):
    earliest: int = Field(description="epoch ms")
    latest: int = Field(description="epoch ms")


class AuditStats(BaseModel):
    """Totals of the audit trail within the window."""

    totalEntries: int
    totalEvents: int = Field(description="denials counted by those entries")
    uniqueUsers: int
    byReason: dict[str, ReasonCount]
    byUser: dict[str, ReasonCount]
    timeRange: TimeRange | None = Field(description="first creation to last update; null if none")


class AclLogEntryRead(BaseModel):
    """One entry of the live ACL LOG."""

    entryId: int | None
    count: int
    reason: str
    context: str
    object: str
    username: str
    ageSeconds: float
    clientInfo: str
    timestampCreated: int | None = Field(description="epoch ms; null before Redis 7.2")
    timestampLastUpdated: int | None = Field(description="epoch ms; null before Redis 7.2")


class AclLogReset(BaseModel):
    """The ACL LOG was reset (ACL LOG RESET)."""

    success: bool
