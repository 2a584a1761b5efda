"""Bodies of the MONITOR capture routes and frames of its live tail."""

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from svc_monitor.console.monitor.models import CaptureSession, MonitorLine
from svc_monitor.console.monitor.service import (
    MAX_BYTES,
    MAX_DURATION_MS,
    MAX_LINES,
    MIN_BYTES,
    MIN_DURATION_MS,
    Preflight,
)

CaptureStatusName = Literal["running", "completed", "stopped", "truncated", "failed"]


class CaptureRequest(BaseModel):
    """How long to capture and how much to keep at most; each optional (defaults: 30 s,
    10,000 lines, 8 MiB), each held within the hard limits."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={"examples": [{"durationMs": 10_000, "maxLines": 5_000}]},
    )

    durationMs: int | None = Field(
        None, ge=MIN_DURATION_MS, le=MAX_DURATION_MS, description="capture length, ms"
    )
    maxLines: int | None = Field(None, ge=1, le=MAX_LINES, description="line cap")
    maxBytes: int | None = Field(
        None, ge=MIN_BYTES, le=MAX_BYTES, description="byte cap (MONITOR output as received)"
    )


class CaptureRead(BaseModel):
    """One capture and how far it got."""

    id: int
    connectionId: str
    status: CaptureStatusName
    startedAt: int = Field(description="epoch ms")
    endedAt: int | None = Field(description="epoch ms; null while running")
    durationMs: int = Field(description="the duration asked for")
    lineCount: int = Field(description="lines captured (stored, once it has ended)")
    byteCount: int = Field(description="bytes of MONITOR output those lines took")
    maxLines: int
    maxBytes: int
    endReason: str | None = Field(
        description="duration reached, stopped by <user>, line cap reached, byte cap "
        "reached, connection lost: <engine error>, ..."
    )
    requestedBy: str | None = Field(description="who started it; null with user control off")
    redacted: bool = Field(description="values were replaced (MONITOR_REDACT_VALUES=true)")


class MonitorLineRead(BaseModel):
    """One captured line. A line that did not parse has only `seq`, `raw` and `size`."""

    seq: int = Field(description="position in the capture, from 0")
    ts: str | None = Field(description='the server\'s time as written: "seconds.micros"')
    tsMs: int | None = Field(description="the same, epoch ms")
    db: int | None
    client: str | None = Field(description='"127.0.0.1:5555", "[::1]:5555", "unix:..." or "lua"')
    command: str | None = Field(description="upper-cased")
    args: list[str] = Field(
        description='the arguments after the command; "(redacted)" for hidden values'
    )
    argCount: int = Field(description="arguments the line carried (args keeps at most 100)")
    shortened: bool = Field(description="an argument (1000 characters kept) or the line was cut")
    raw: str | None = Field(description="the line's text when it did not parse")
    size: int = Field(description="bytes of the line as the server wrote it")


class CapsRead(BaseModel):
    durationMs: int
    maxLines: int
    maxBytes: int


class PreflightRead(BaseModel):
    """What starting a capture would do."""

    connectionId: str
    allowed: bool | None = Field(
        description="whether the engine lets this connection's user run MONITOR (tried and "
        "hung up at once); null when the engine did not answer"
    )
    problem: str | None = Field(description="why not, or why nobody can tell, for a person")
    opsPerSec: float | None = Field(description="commands per second now (INFO stats)")
    estimatedLines: int | None = Field(description="about this many lines over the duration")
    estimatedBytes: int | None
    endsBy: Literal["duration", "line cap", "byte cap"] | None = Field(
        description="which limit the estimate reaches first"
    )
    caps: CapsRead = Field(description="the caps a capture with these settings would have")
    limits: CapsRead = Field(description="the largest caps anyone may ask for")
    running: CaptureRead | None = Field(description="the capture running on this connection")
    redacted: bool = Field(description="values will be replaced (MONITOR_REDACT_VALUES=true)")


def capture_dict(session: CaptureSession) -> dict[str, Any]:
    return {
        "id": session.id,
        "connectionId": session.connection_id,
        "status": session.status.value,
        "startedAt": session.started_at,
        "endedAt": session.ended_at,
        "durationMs": session.caps.duration_ms,
        "lineCount": session.line_count,
        "byteCount": session.byte_count,
        "maxLines": session.caps.max_lines,
        "maxBytes": session.caps.max_bytes,
        "endReason": session.end_reason,
        "requestedBy": session.requested_by,
        "redacted": session.redacted,
    }


def line_dict(line: MonitorLine) -> dict[str, Any]:
    return {
        "seq": line.seq,
        "ts": line.ts,
        "tsMs": line.ts_ms,
        "db": line.db,
        "client": line.client,
        "command": line.command,
        "args": list(line.args),
        "argCount": line.arg_count,
        "shortened": line.shortened,
        "raw": line.raw,
        "size": line.size,
    }


def preflight_read(preflight: Preflight) -> PreflightRead:
    caps = preflight.caps
    running = preflight.running
    return PreflightRead(
        connectionId=preflight.connection_id,
        allowed=preflight.allowed,
        problem=preflight.problem,
        opsPerSec=preflight.ops_per_sec,
        estimatedLines=preflight.estimated_lines,
        estimatedBytes=preflight.estimated_bytes,
        endsBy=preflight.ends_by,
        caps=CapsRead(
            durationMs=caps.duration_ms, maxLines=caps.max_lines, maxBytes=caps.max_bytes
        ),
        limits=CapsRead(durationMs=MAX_DURATION_MS, maxLines=MAX_LINES, maxBytes=MAX_BYTES),
        running=None if running is None else CaptureRead(**capture_dict(running)),
        redacted=preflight.redacted,
    )
