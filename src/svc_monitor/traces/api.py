"""Trace routes (under /api): stored traces, listed and one by one.

Spans arrive through `POST /v1/traces` at the server root (otlp/ingest/api.py).
"""

from typing import Annotated

from fastapi import APIRouter, Path, Query

from svc_monitor.api.error_responses import error_responses
from svc_monitor.api.params import From, To
from svc_monitor.traces.dependencies import TracesDep
from svc_monitor.traces.schemas import TraceListRead, TraceRead
from svc_monitor.traces.store import TraceStatus

router = APIRouter(tags=["traces"])

TraceId = Annotated[
    str,
    Path(
        alias="traceId",
        pattern="^[0-9a-fA-F]{32}$",
        description="32 hexadecimal characters, as OTLP JSON writes trace ids",
    ),
]


@router.get("/traces", response_model=TraceListRead, responses=error_responses(422))
async def list_traces(
    traces: TracesDep,
    since: From = None,
    until: To = None,
    service: Annotated[
        str | None,
        Query(max_length=256, description="traces with a span from this `service.name`"),
    ] = None,
    status: Annotated[
        TraceStatus | None,
        Query(description="error: a span failed; ok: none failed and one is OK; unset: neither"),
    ] = None,
    min_duration: Annotated[
        float | None,
        # A bound past any real trace (30 years), short of the int64 the query compares in.
        Query(
            alias="minDurationMs",
            ge=0,
            le=1e12,
            description="earliest start to latest end, ms",
        ),
    ] = None,
    limit: Annotated[int, Query(ge=1, le=1000, description="at most this many traces")] = 100,
) -> TraceListRead:
    """Stored traces that started in the window (`from` defaults to an hour before `to`,
    or before now), newest first, each summarised by its root span. Stored are the
    spans of instrumentation scopes named `@svc/...` and every root span."""
    return await traces.list_traces(
        since=since,
        until=until,
        service=service,
        status=status,
        min_duration_ms=min_duration,
        limit=limit,
    )


@router.get("/traces/{traceId}", response_model=TraceRead, responses=error_responses(404, 422))
async def get_trace(traces: TracesDep, trace_id: TraceId) -> TraceRead:
    """One trace: its spans in tree order (each followed by its children, siblings by
    start time) with their depth, attributes, events and status, as a waterfall draws
    them. At most 10,000 spans (`truncated` says when there are more)."""
    return await traces.get_trace(trace_id)
