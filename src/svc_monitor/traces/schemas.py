"""Bodies of the trace routes: trace summaries, and one trace as a span tree."""

from typing import Any, Literal

from pydantic import BaseModel, Field

SpanKind = Literal["unspecified", "internal", "server", "client", "producer", "consumer"]
SpanStatus = Literal["unset", "ok", "error"]


class TraceSummaryRead(BaseModel):
    """One stored trace in a list."""

    traceId: str = Field(description="32 lowercase hex characters")
    rootName: str = Field(description="the root span's name (the first span's while no root)")
    serviceName: str | None = Field(description="the root span's resource `service.name`")
    startTimeMs: int = Field(description="epoch ms of the earliest span's start")
    durationMs: float = Field(description="earliest start to latest end")
    spanCount: int
    hasError: bool = Field(description="a span has status ERROR")
    status: SpanStatus = Field(
        description="error when a span has status ERROR; else ok when one has OK; unset "
        "when every span left its status unset (OpenTelemetry's default: neither ok nor error)"
    )


class TraceListRead(BaseModel):
    """Traces that started in the window, newest first."""

    traces: list[TraceSummaryRead]


class SpanEventRead(BaseModel):
    name: str
    timeUnixNano: str = Field(description="as OTLP JSON writes int64: a decimal string")
    offsetMs: float = Field(description="from the trace's start")
    attributes: dict[str, Any]


class SpanRead(BaseModel):
    """One span, placed in its trace: `depth` 0 for a root (or a span whose parent was not
    stored), its children's 1, and so on."""

    spanId: str
    parentSpanId: str | None = Field(description="null for a root span")
    name: str
    kind: SpanKind
    scopeName: str
    serviceName: str | None
    startTimeUnixNano: str
    endTimeUnixNano: str
    offsetMs: float = Field(description="start, from the trace's start")
    durationMs: float
    statusCode: SpanStatus
    statusMessage: str | None
    attributes: dict[str, Any]
    events: list[SpanEventRead]
    resourceAttributes: dict[str, Any]
    depth: int


class TraceRead(TraceSummaryRead):
    """One trace as a waterfall reads it: `spans` in tree order (depth first: each span is
    followed by its children, siblings by start time), each with its `depth`."""

    truncated: bool = Field(description="the trace has more spans than the ones listed")
    spans: list[SpanRead]
