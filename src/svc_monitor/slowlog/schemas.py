"""Bodies of the slow-log and command-log routes."""

from typing import Literal

from pydantic import BaseModel, Field

LogTypeParam = Literal["slow", "large-request", "large-reply"]

_DURATION = "microseconds for the slow log and type slow; bytes for large-request/large-reply"


class LogEntryRead(BaseModel):
    """One entry as the server logged it."""

    id: int = Field(description="the server's entry id (starts again at 0 after a restart)")
    startedAt: int = Field(description="when the command started, epoch ms (second precision)")
    duration: int = Field(description=_DURATION)
    command: str = Field(description="the command name, upper-cased")
    args: list[str] = Field(description="the command and its arguments as the server kept them")
    clientAddress: str | None
    clientName: str | None


class CommandLogEntryRead(LogEntryRead):
    """One COMMANDLOG entry, with the log it came from."""

    type: LogTypeParam


class StoredLogEntry(LogEntryRead):
    """An entry from history: where it came from and when the monitor stored it."""

    node: str = Field(description="host:port of the server that logged it")
    capturedAt: int = Field(description="epoch ms the monitor stored it")


class StoredCommandLogEntry(StoredLogEntry):
    type: LogTypeParam


class LogLength(BaseModel):
    length: int


class LogReset(BaseModel):
    success: bool


class PatternExample(BaseModel):
    """One entry of a pattern, arguments shortened (at most 16, each at most 128 chars)."""

    id: int
    startedAt: int
    duration: int
    args: list[str]
    clientAddress: str | None


class PatternStats(BaseModel):
    """Entries that share one pattern (see slowlog/command_patterns.py for the rule)."""

    pattern: str = Field(examples=["GET user:*"])
    command: str
    count: int
    percentage: float = Field(description="share of the analysed entries, 0-100")
    avgDuration: float = Field(description=_DURATION)
    maxDuration: int
    minDuration: int
    totalDuration: int
    examples: list[PatternExample] = Field(description="the newest three")


class CommandStats(BaseModel):
    command: str
    count: int
    percentage: float
    avgDuration: float


class PatternAnalysis(BaseModel):
    """Pattern analysis over the newest `count` stored entries, busiest pattern first."""

    totalEntries: int
    analyzedAt: int = Field(description="epoch ms")
    patterns: list[PatternStats]
    byCommand: list[CommandStats]
