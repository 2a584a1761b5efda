"""OTLP metrics payloads as a Collector's redisreceiver sends them, built with the official
message classes: one resource per instance, gauges and cumulative sums."""

import time
from typing import Any

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.metrics.v1.metrics_pb2 import (
    AggregationTemporality,
    Metric,
    NumberDataPoint,
    ResourceMetrics,
)

CUMULATIVE = AggregationTemporality.AGGREGATION_TEMPORALITY_CUMULATIVE
DELTA = AggregationTemporality.AGGREGATION_TEMPORALITY_DELTA
PROTOBUF = {"content-type": "application/x-protobuf"}


def attributes(values: dict[str, Any]) -> list[KeyValue]:
    out = []
    for key, value in values.items():
        if isinstance(value, int):
            out.append(KeyValue(key=key, value=AnyValue(int_value=value)))
        else:
            out.append(KeyValue(key=key, value=AnyValue(string_value=str(value))))
    return out


def point(value: int | float | None, *, at_ns: int | None = None, **attrs: Any) -> NumberDataPoint:
    p = NumberDataPoint(time_unix_nano=at_ns or time.time_ns(), attributes=attributes(attrs))
    if isinstance(value, int):
        p.as_int = value
    elif isinstance(value, float):
        p.as_double = value
    return p


def gauge(name: str, *points: NumberDataPoint) -> Metric:
    metric = Metric(name=name)
    metric.gauge.data_points.extend(points)
    return metric


def cumulative(name: str, *points: NumberDataPoint, temporality: int = CUMULATIVE) -> Metric:
    metric = Metric(name=name)
    metric.sum.aggregation_temporality = temporality  # type: ignore[assignment]
    metric.sum.is_monotonic = True
    metric.sum.data_points.extend(points)
    return metric


def resource(resource_attrs: dict[str, Any], *metrics: Metric) -> ResourceMetrics:
    rm = ResourceMetrics()
    rm.resource.attributes.extend(attributes(resource_attrs))
    scope = rm.scope_metrics.add()
    scope.scope.name = (
        "github.com/open-telemetry/opentelemetry-collector-contrib/receiver/redisreceiver"
    )
    scope.metrics.extend(metrics)
    return rm


def at(host: str, port: int | str, **more: Any) -> dict[str, Any]:
    """Resource attributes as the receiver sends them with server.* enabled (port a string)."""
    return {"server.address": host, "server.port": str(port), **more}


def body(*resources: ResourceMetrics) -> bytes:
    return ExportMetricsServiceRequest(resource_metrics=list(resources)).SerializeToString()


def answer(content: bytes) -> ExportMetricsServiceResponse:
    parsed = ExportMetricsServiceResponse()
    parsed.ParseFromString(content)
    return parsed


def reasons(response: ExportMetricsServiceResponse) -> dict[str, int]:
    text = response.partial_success.error_message
    return {k: int(v) for k, v in (item.split("=") for item in text.split())} if text else {}
