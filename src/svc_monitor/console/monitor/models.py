"""MONITOR captures and their lines, as the service holds them."""

from dataclasses import dataclass
from enum import StrEnum
from typing import Literal, TypeAlias

# Which limit ends a capture first, as a preflight estimates it.
EndsBy: TypeAlias = Literal["duration", "line cap", "byte cap"]


class CaptureStatus(StrEnum):
    RUNNING = "running"
    COMPLETED = "completed"  # ran for its whole duration
    STOPPED = "stopped"  # ended early by a user, or by svc-monitor shutting down
    TRUNCATED = "truncated"  # reached its line or byte cap
    FAILED = "failed"  # the engine went away, or svc-monitor stopped without ending it


@dataclass(frozen=True, slots=True)
class Caps:
    """How long a capture may run and how much it may keep."""

    duration_ms: int
    max_lines: int
    max_bytes: int


@dataclass(frozen=True, slots=True)
class CaptureSession:
    """One capture: what was asked, and how far it got."""

    id: int
    connection_id: str
    status: CaptureStatus
    started_at: int  # epoch ms
    ended_at: int | None
    caps: Caps
    line_count: int
    byte_count: int  # MONITOR output received, in bytes as the server wrote it
    end_reason: str | None
    requested_by: str | None  # the user's name; None when user control is off
    redacted: bool


@dataclass(frozen=True, slots=True)
class MonitorLine:
    """One line of MONITOR output, parsed (and redacted, when asked) before anything keeps it.

    A line that does not parse keeps its text in `raw`, and the other fields are None.
    """

    seq: int  # 0-based position in its capture
    ts: str | None  # the server's "seconds.micros", as written
    ts_ms: int | None
    db: int | None
    client: str | None  # "127.0.0.1:5555", "[::1]:5555", "unix:/path/to.sock" or "lua"
    command: str | None  # upper-cased
    args: tuple[str, ...]  # the arguments after the command, each possibly shortened
    arg_count: int  # how many arguments the line carried (args may keep fewer)
    shortened: bool  # some argument, or the line itself, was cut to bound its size
    raw: str | None
    size: int  # bytes of the line on the wire, without its CRLF
