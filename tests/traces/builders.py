"""OTLP trace export requests built the way SDKs build them, for the trace tests."""

import os
import time
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

MS = 1_000_000  # nanoseconds


def any_value(value: Any) -> AnyValue:
    if isinstance(value, bool):
        return AnyValue(bool_value=value)
    if isinstance(value, int):
        return AnyValue(int_value=value)
    if isinstance(value, float):
        return AnyValue(double_value=value)
    if isinstance(value, bytes):
        return AnyValue(bytes_value=value)
    if isinstance(value, list):
        out = AnyValue()
        out.array_value.values.extend(any_value(v) for v in value)
        return out
    if isinstance(value, dict):
        out = AnyValue()
        out.kvlist_value.values.extend(key_values(value))
        return out
    return AnyValue(string_value=str(value))


def key_values(attributes: dict[str, Any]) -> list[KeyValue]:
    return [KeyValue(key=k, value=any_value(v)) for k, v in attributes.items()]


def new_trace_id() -> bytes:
    return os.urandom(16)


def new_span_id() -> bytes:
    return os.urandom(8)


@dataclass
class SpanSpec:
    """One span to send: times in ms from `start_ns` of its request."""

    name: str
    trace_id: bytes
    span_id: bytes = field(default_factory=new_span_id)
    parent: bytes = b""
    start_ms: float = 0.0
    duration_ms: float = 1.0
    scope: str = "@svc/test-app"
    service: str | None = "checkout"
    status: int = 0
    status_message: str = ""
    kind: int = 1
    attributes: dict[str, Any] = field(default_factory=dict)
    events: list[tuple[str, float, dict[str, Any]]] = field(default_factory=list)


def export_request(*spans: SpanSpec, start_ns: int | None = None) -> ExportTraceServiceRequest:
    """One ResourceSpans per (service, scope), as an SDK groups them."""
    base = start_ns if start_ns is not None else time.time_ns()
    request = ExportTraceServiceRequest()
    groups: dict[tuple[str | None, str], list[SpanSpec]] = {}
    for spec in spans:
        groups.setdefault((spec.service, spec.scope), []).append(spec)
    for (service, scope), members in groups.items():
        resource_spans = request.resource_spans.add()
        resource = {"telemetry.sdk.language": "python"}
        if service is not None:
            resource["service.name"] = service
        resource_spans.resource.attributes.extend(key_values(resource))
        scope_spans = resource_spans.scope_spans.add()
        scope_spans.scope.name = scope
        for spec in members:
            scope_spans.spans.append(_span(spec, base))
    return request


def _span(spec: SpanSpec, base: int) -> Span:
    start = base + int(spec.start_ms * MS)
    span = Span(
        trace_id=spec.trace_id,
        span_id=spec.span_id,
        parent_span_id=spec.parent,
        name=spec.name,
        kind=spec.kind,  # type: ignore[arg-type]
        start_time_unix_nano=start,
        end_time_unix_nano=start + int(spec.duration_ms * MS),
        status=Status(code=spec.status, message=spec.status_message),  # type: ignore[arg-type]
    )
    span.attributes.extend(key_values(spec.attributes))
    for name, at_ms, attributes in spec.events:
        event = span.events.add()
        event.name = name
        event.time_unix_nano = base + int(at_ms * MS)
        event.attributes.extend(key_values(attributes))
    return span
