"""Traces: OTLP spans in (POST /v1/traces), trace lists and span trees out.

`ingest` keeps the spans convert.py says to keep, stores them through a group-commit
writer (writer.py) and answers the OTLP response: full success leaves
`partial_success` unset; otherwise `rejected_spans` is the number not kept and
`error_message` lists `<reason>=<count>` items (reasons in convert.py). The counters
`spans_stored`, `spans_dropped` and `spans_dropped_by_reason` count since start, for
the Prometheus collector.
"""

import json
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy import Row

from svc_monitor.config import Settings
from svc_monitor.errors import NotFound, Unprocessable
from svc_monitor.events import now_ms
from svc_monitor.traces.convert import DropReason, error_message, span_rows
from svc_monitor.traces.schemas import (
    SpanEventRead,
    SpanKind,
    SpanRead,
    SpanStatus,
    TraceListRead,
    TraceRead,
    TraceSummaryRead,
)
from svc_monitor.traces.store import STATUS_ERROR, STATUS_OK, TraceQuery, TraceStatus, TraceStore
from svc_monitor.traces.writer import GroupWriter

if TYPE_CHECKING:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
        ExportTraceServiceResponse,
    )

DEFAULT_WINDOW_MS = 3_600_000
# A trace page lists at most this many spans; a trace with more says it is truncated.
MAX_TRACE_SPANS = 10_000
_TRACE_ID = re.compile(r"[0-9a-f]{32}")
_KINDS: tuple[SpanKind, ...] = (
    "unspecified",
    "internal",
    "server",
    "client",
    "producer",
    "consumer",
)
_STATUSES: tuple[SpanStatus, ...] = ("unset", "ok", "error")


class TraceNotFound(NotFound):
    def __init__(self, trace_id: str) -> None:
        super().__init__(f"No stored trace has the id {trace_id}")


class InvalidTraceId(Unprocessable):
    def __init__(self) -> None:
        super().__init__("traceId must be 32 hexadecimal characters", field="traceId")


class TraceService:
    """Stores ingested spans and reads traces back."""

    def __init__(self, store: TraceStore, settings: Settings) -> None:
        self._store = store
        self._settings = settings
        self._writer = GroupWriter(store.upsert)
        self.spans_stored = 0
        self.spans_dropped = 0
        self.spans_dropped_by_reason: dict[str, int] = {reason.value: 0 for reason in DropReason}

    async def ingest(self, request: "ExportTraceServiceRequest") -> "ExportTraceServiceResponse":
        """Store the spans to keep; the OTLP answer counts the others."""
        # Imported here: the protobuf classes load with the first export, not at startup.
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceResponse,
        )

        rows, dropped = span_rows(request)
        rejected = sum(dropped.values())
        if rejected:
            self.spans_dropped += rejected
            for reason, count in dropped.items():
                self.spans_dropped_by_reason[reason.value] += count
        await self._writer.write(rows)
        self.spans_stored += len(rows)
        response = ExportTraceServiceResponse()
        if rejected:
            response.partial_success.rejected_spans = rejected
            response.partial_success.error_message = error_message(dropped)
        return response

    async def flush(self) -> None:
        """Wait until every span handed over so far is written."""
        await self._writer.flush()

    async def list_traces(
        self,
        *,
        since: int | None = None,
        until: int | None = None,
        service: str | None = None,
        status: TraceStatus | None = None,
        min_duration_ms: float | None = None,
        limit: int = 100,
    ) -> TraceListRead:
        """Traces that started in [since, until], newest first; `since` defaults to an hour
        before `until` (or now)."""
        if since is None:
            since = (until if until is not None else now_ms()) - DEFAULT_WINDOW_MS
        query = TraceQuery(
            since=since,
            until=until,
            service=service,
            status=status,
            min_duration_ms=min_duration_ms,
            limit=limit,
        )
        rows = await self._store.traces(query)
        return TraceListRead(
            traces=[
                TraceSummaryRead(
                    traceId=r.trace_id,
                    rootName=r.root_name,
                    serviceName=r.service_name,
                    startTimeMs=int(r.start_ms),
                    durationMs=_ms(int(r.end_ns) - int(r.start_ns)),
                    spanCount=int(r.span_count),
                    hasError=int(r.errors) > 0,
                    status=trace_status(errors=int(r.errors), oks=int(r.oks)),
                )
                for r in rows
            ]
        )

    async def get_trace(self, trace_id: str) -> TraceRead:
        """One trace's spans in tree order with their depth."""
        trace_id = trace_id.lower()
        if not _TRACE_ID.fullmatch(trace_id):
            raise InvalidTraceId()
        rows = await self._store.spans(trace_id, limit=MAX_TRACE_SPANS)
        if not rows:
            raise TraceNotFound(trace_id)
        count = len(rows)
        if count == MAX_TRACE_SPANS:
            count = await self._store.count_spans(trace_id)
        start_ns = min(int(r.start_time_unix_nano) for r in rows)
        end_ns = max(int(r.end_time_unix_nano) for r in rows)
        ordered = tree_order(rows)
        root = next((r for r, _ in ordered if r.parent_span_id is None), ordered[0][0])
        return TraceRead(
            traceId=trace_id,
            rootName=root.name,
            serviceName=root.service_name,
            startTimeMs=start_ns // 1_000_000,
            durationMs=_ms(end_ns - start_ns),
            spanCount=count,
            hasError=any(r.status_code == STATUS_ERROR for r in rows),
            status=trace_status(
                errors=sum(r.status_code == STATUS_ERROR for r in rows),
                oks=sum(r.status_code == STATUS_OK for r in rows),
            ),
            truncated=count > len(rows),
            spans=[_span(row, depth, start_ns) for row, depth in ordered],
        )

    async def services(self, *, since: int, limit: int = 100) -> list[str]:
        """Service names seen since `since`: the trace list's service filter offers them."""
        return await self._store.services(since=since, limit=limit)


def trace_status(*, errors: int, oks: int) -> SpanStatus:
    """A trace's status from its spans', as the list's status filter reads it (store.py):
    one ERROR makes it error; else one OK makes it ok; else it is unset, which
    OpenTelemetry defines as neither ok nor error."""
    if errors:
        return "error"
    return "ok" if oks else "unset"


def tree_order(rows: Sequence[Row[Any]]) -> list[tuple[Row[Any], int]]:
    """Depth first from the roots; siblings by start (rows come earliest first).

    A span whose parent is not stored is a root; spans only reachable through a
    parent cycle (a malformed export) come last, at depth 0.
    """
    ids = {r.span_id for r in rows}
    children: dict[str, list[Row[Any]]] = {}
    roots: list[Row[Any]] = []
    for row in rows:
        parent = row.parent_span_id
        if parent is None or parent not in ids or parent == row.span_id:
            roots.append(row)
        else:
            children.setdefault(parent, []).append(row)
    ordered: list[tuple[Row[Any], int]] = []
    seen: set[str] = set()
    stack = [(row, 0) for row in reversed(roots)]
    while stack:
        row, depth = stack.pop()
        if row.span_id in seen:
            continue
        seen.add(row.span_id)
        ordered.append((row, depth))
        stack.extend((child, depth + 1) for child in reversed(children.get(row.span_id, [])))
    ordered.extend((row, 0) for row in rows if row.span_id not in seen)
    return ordered


def _span(row: Row[Any], depth: int, trace_start_ns: int) -> SpanRead:
    start, end = int(row.start_time_unix_nano), int(row.end_time_unix_nano)
    events = [
        SpanEventRead(
            name=e["name"],
            timeUnixNano=str(e["timeUnixNano"]),
            offsetMs=_ms(int(e["timeUnixNano"]) - trace_start_ns),
            attributes=e["attributes"],
        )
        for e in json.loads(row.events)
    ]
    return SpanRead(
        spanId=row.span_id,
        parentSpanId=row.parent_span_id,
        name=row.name,
        kind=_KINDS[row.kind] if 0 <= row.kind < len(_KINDS) else "unspecified",
        scopeName=row.scope_name,
        serviceName=row.service_name,
        startTimeUnixNano=str(start),
        endTimeUnixNano=str(end),
        offsetMs=_ms(start - trace_start_ns),
        durationMs=_ms(int(row.duration_ns)),
        statusCode=_STATUSES[row.status_code] if 0 <= row.status_code < 3 else "unset",
        statusMessage=row.status_message,
        attributes=json.loads(row.attributes),
        events=events,
        resourceAttributes=json.loads(row.resource_attributes),
        depth=depth,
    )


def _ms(nanoseconds: int) -> float:
    return round(nanoseconds / 1e6, 3)
