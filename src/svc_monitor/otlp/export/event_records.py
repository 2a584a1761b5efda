"""One notification as an OTLP log record, and a batch of them as an export request.

The record follows the OpenTelemetry event conventions: `event_name` is the webhook event
type (stable, no dynamic parts), `time_unix_nano` when it happened, a default severity
per event type (SEVERITY below, from the event table), the payload's one-sentence
`message` as the body, and the details as attributes:

- `event.name`: the event type again, for backends that index attributes only;
- `svc.connection.id`, `server.address`, `server.port` (int): the connection, as the
  registry knows it (address and port are left out for a connection since removed);
- `svc.event.<field>` for every field of the webhook payload except `message` (the body):
  strings, numbers and booleans as such, lists and objects as JSON text, nulls left out.

All records of a batch share one resource (`service.name` = svc-monitor) and one scope,
the logger `svc-events`.
"""

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, InstrumentationScope, KeyValue
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord, ResourceLogs, ScopeLogs
from opentelemetry.proto.resource.v1.resource_pb2 import Resource

from svc_monitor import __version__
from svc_monitor.event_types.base import SeverityName
from svc_monitor.event_types.table import EVENT_TYPES

SCOPE = "svc-events"  # the logger name (docs/features/otlp-export.md#record-shape)
SERVICE_NAME = "svc-monitor"
ATTRIBUTE_PREFIX = "svc.event."
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


@dataclass(frozen=True, slots=True)
class Severity:
    number: int  # SeverityNumber: INFO 9, WARN 13, ERROR 17
    text: str


INFO = Severity(9, "INFO")
WARN = Severity(13, "WARN")
ERROR = Severity(17, "ERROR")

# The default severity of each event type, as the type declares it (event_types/).
_BY_LEVEL: dict[SeverityName, Severity] = {"info": INFO, "warn": WARN, "error": ERROR}
SEVERITY: dict[str, Severity] = {e.name: _BY_LEVEL[e.severity] for e in EVENT_TYPES}
# Payloads that grade themselves (anomaly.detected, compliance.alert) keep their grade;
# cve.detected's severity is a CVE's: only `critical` matches (ERROR), the rest stay WARN.
_BY_PAYLOAD = {"info": INFO, "warning": WARN, "critical": ERROR}


def severity_of(event_type: str, data: Mapping[str, Any]) -> Severity:
    graded = data.get("severity")
    if isinstance(graded, str) and graded in _BY_PAYLOAD:
        return _BY_PAYLOAD[graded]
    if event_type == "cluster.failover" and _cluster_recovered(data):
        return INFO  # the same event type announces the recovery (fail -> ok)
    return SEVERITY.get(event_type, WARN)


def _cluster_recovered(data: Mapping[str, Any]) -> bool:
    return data.get("clusterState") == "ok" and data.get("slotsFailed") == 0


@dataclass(frozen=True, slots=True)
class Instance:
    """Where an event happened, from the connection registry."""

    connection_id: str
    host: str | None
    port: int | None


def log_record(
    event_type: str,
    data: Mapping[str, Any],
    instance: Instance,
    *,
    at_ms: int,
    observed_ns: int,
) -> LogRecord:
    severity = severity_of(event_type, data)
    attributes = [_kv("event.name", event_type), _kv("svc.connection.id", instance.connection_id)]
    if instance.host is not None:
        attributes.append(_kv("server.address", instance.host))
    if instance.port is not None:
        attributes.append(_kv("server.port", instance.port))
    for name, value in data.items():
        if name != "message" and value is not None:
            attributes.append(_kv(ATTRIBUTE_PREFIX + name, value))
    message = data.get("message")
    return LogRecord(
        time_unix_nano=at_ms * 1_000_000,
        observed_time_unix_nano=observed_ns,
        severity_number=severity.number,  # type: ignore[arg-type]
        severity_text=severity.text,
        event_name=event_type,
        body=AnyValue(string_value=message) if isinstance(message, str) else None,
        attributes=attributes,
    )


def export_request(records: list[LogRecord]) -> ExportLogsServiceRequest:
    resource = Resource(
        attributes=[_kv("service.name", SERVICE_NAME), _kv("service.version", __version__)]
    )
    scope = InstrumentationScope(name=SCOPE, version=__version__)
    scope_logs = ScopeLogs(scope=scope, log_records=records)
    return ExportLogsServiceRequest(
        resource_logs=[ResourceLogs(resource=resource, scope_logs=[scope_logs])]
    )


def _kv(key: str, value: Any) -> KeyValue:
    return KeyValue(key=key, value=_any_value(value))


def _any_value(value: Any) -> AnyValue:
    # bool first: it is an int to Python, and a 1 where a true was meant misleads a query.
    if isinstance(value, bool):
        return AnyValue(bool_value=value)
    if isinstance(value, int) and _INT64_MIN <= value <= _INT64_MAX:
        return AnyValue(int_value=value)
    if isinstance(value, float):
        return AnyValue(double_value=value)
    if isinstance(value, str | int):
        return AnyValue(string_value=str(value))
    return AnyValue(string_value=json.dumps(value, separators=(",", ":"), sort_keys=True))
