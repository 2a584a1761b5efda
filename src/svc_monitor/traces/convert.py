"""OTLP spans -> span rows, and which spans are not kept and why.

Kept: every span of an instrumentation scope named `@svc/...`, and every root span
(empty or all-zero parent span id) whatever its scope, so each stored trace has its
entry point. Not kept, counted by reason (the `<reason>=<count>` items of
`partialSuccess.errorMessage`):

| reason        | span |
|---------------|------|
| not_svc_scope | a child span (it has a parent) from a scope not named `@svc/...` |
| invalid_id    | trace id not 16 bytes or all zero, span id not 8 bytes or all zero, |
|               | or a parent id neither empty nor 8 bytes |

Plain loops over the protobuf objects, no `json_format`: at 40,000 spans/s the
conversion is a third of the budget (bench/otlp_ingest.py). Attribute values become
JSON values: strings, bools, ints, finite doubles (NaN and infinities as the strings
"NaN", "Infinity", "-Infinity"), arrays, key-value lists as objects, bytes as base64.
"""

import base64
import json
import math
from collections.abc import Callable, Iterable
from enum import StrEnum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
    from opentelemetry.proto.trace.v1.trace_pb2 import Span

SVC_SCOPE_PREFIX = "@svc/"
_ZERO_TRACE_ID = bytes(16)
_ZERO_SPAN_ID = bytes(8)
# Timestamps are fixed64 on the wire; the columns are signed 64-bit.
_INT64_MAX = 2**63 - 1
_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
# json's own string quoting (C): what _dumps writes for a str.
_quote: Callable[[str], str] = json.encoder.encode_basestring


class DropReason(StrEnum):
    NOT_SVC_SCOPE = "not_svc_scope"
    INVALID_ID = "invalid_id"


# A span row: the values of these columns of trace_spans, in this order.
COLUMNS = (
    "trace_id",
    "span_id",
    "parent_span_id",
    "name",
    "scope_name",
    "service_name",
    "kind",
    "start_time_unix_nano",
    "end_time_unix_nano",
    "captured_at",
    "duration_ns",
    "status_code",
    "status_message",
    "attributes",
    "events",
    "resource_attributes",
)
SpanRow = tuple[Any, ...]


def span_rows(request: "ExportTraceServiceRequest") -> tuple[list[SpanRow], dict[DropReason, int]]:
    """The rows to store for `request`, and how many spans were left out, by reason."""
    rows: list[SpanRow] = []
    dropped: dict[DropReason, int] = {}
    for resource_spans in request.resource_spans:
        resource = attributes_of(resource_spans.resource.attributes)
        service = resource.get("service.name")
        service_name = service if isinstance(service, str) else None
        resource_json = _dumps(resource)
        for scope_spans in resource_spans.scope_spans:
            scope_name = scope_spans.scope.name
            ours = scope_name.startswith(SVC_SCOPE_PREFIX)
            for span in scope_spans.spans:
                parent = span.parent_span_id
                is_root = not parent or parent == _ZERO_SPAN_ID
                if not (ours or is_root):
                    reason = DropReason.NOT_SVC_SCOPE
                    dropped[reason] = dropped.get(reason, 0) + 1
                    continue
                if not _ids_valid(span.trace_id, span.span_id, None if is_root else parent):
                    reason = DropReason.INVALID_ID
                    dropped[reason] = dropped.get(reason, 0) + 1
                    continue
                rows.append(_row(span, is_root, scope_name, service_name, resource_json))
    return rows, dropped


def _ids_valid(trace_id: bytes, span_id: bytes, parent: bytes | None) -> bool:
    return (
        len(trace_id) == 16
        and trace_id != _ZERO_TRACE_ID
        and len(span_id) == 8
        and span_id != _ZERO_SPAN_ID
        and (parent is None or len(parent) == 8)
    )


def _row(
    span: "Span", is_root: bool, scope_name: str, service_name: str | None, resource_json: str
) -> SpanRow:
    start = span.start_time_unix_nano
    end = span.end_time_unix_nano
    if start > _INT64_MAX or end > _INT64_MAX:
        start, end = min(start, _INT64_MAX), min(end, _INT64_MAX)
    events = span.events
    status = span.status
    return (
        span.trace_id.hex(),
        span.span_id.hex(),
        None if is_root else span.parent_span_id.hex(),
        span.name,
        scope_name,
        service_name,
        span.kind,
        start,
        end,
        start // 1_000_000,
        end - start if end > start else 0,
        status.code,
        status.message or None,
        _attributes_json(span.attributes),
        _events_json(events) if events else "[]",
        resource_json,
    )


def attributes_of(pairs: "Iterable[KeyValue]") -> dict[str, Any]:
    """OTLP KeyValue pairs as a dict of JSON values (a repeated key: the last one wins)."""
    out: dict[str, Any] = {}
    for pair in pairs:
        out[pair.key] = _value(pair.value)
    return out


def _attributes_json(pairs: "Iterable[KeyValue]") -> str:
    """attributes_of as JSON text, written directly for the common scalar kinds: a
    quarter faster than a dict through json.dumps on five attributes (measured), and
    attributes are the conversion's largest cost. A repeated key appears twice; JSON
    readers keep the last, as attributes_of does."""
    if not pairs:
        return "{}"
    parts = []
    for pair in pairs:
        value = pair.value
        kind = value.WhichOneof("value")
        if kind == "string_value":
            parts.append(f"{_quote(pair.key)}:{_quote(value.string_value)}")
        elif kind == "int_value":
            parts.append(f"{_quote(pair.key)}:{value.int_value}")
        else:
            parts.append(f"{_quote(pair.key)}:{_dumps(_value(value))}")
    return "{" + ",".join(parts) + "}"


def _value(value: "AnyValue") -> Any:
    kind = value.WhichOneof("value")
    if kind == "string_value":
        return value.string_value
    if kind == "int_value":
        return value.int_value
    if kind == "bool_value":
        return value.bool_value
    if kind == "double_value":
        number = value.double_value
        return number if math.isfinite(number) else _non_finite(number)
    if kind == "array_value":
        return [_value(item) for item in value.array_value.values]
    if kind == "kvlist_value":
        return attributes_of(value.kvlist_value.values)
    if kind == "bytes_value":
        return base64.b64encode(value.bytes_value).decode()
    return None


def _non_finite(number: float) -> str:
    if math.isnan(number):
        return "NaN"
    return "Infinity" if number > 0 else "-Infinity"


def _events_json(events: "Iterable[Span.Event]") -> str:
    return _dumps(
        [
            {
                "name": event.name,
                "timeUnixNano": min(event.time_unix_nano, _INT64_MAX),
                "attributes": attributes_of(event.attributes),
            }
            for event in events
        ]
    )


def error_message(dropped: dict[DropReason, int]) -> str:
    """`<reason>=<count>` items, space-separated, in the table's order."""
    return " ".join(f"{reason}={dropped[reason]}" for reason in DropReason if reason in dropped)
