"""The registry's families as OTLP ExportMetricsServiceRequests, in either export mode.

`build_requests` is pure (families in, requests out, plus the series memory it updates),
so bench/prometheus.py can time one export cycle without a collector.

- mode `mirror`: one request, one resource `service.name=svc-monitor`, the scrape names
  (counters with `_total`), every label kept as an attribute (so `connection` on every
  connection point), the unit read from the name's suffix.
- mode `semconv`: one request per node (resource: service.name and db.system.name = its
  engine, service.instance.id = host:port, server.address, server.port, <engine>.version)
  plus one for the monitor (`svc-monitor`: process, garbage collector, the service's own
  families, and points whose `connection` is not a host:port, which keep that attribute).
  Names, units and conversions from semconv_names.py; a family without an entry keeps
  its scrape name.

Both modes skip histograms and summaries, send counters as cumulative monotonic sums and
everything else as gauges.
"""

import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.metrics.v1.metrics_pb2 import AggregationTemporality

from svc_monitor import __version__
from svc_monitor.config import ExportMode
from svc_monitor.otlp.export.semconv_names import (
    Conversion,
    SemconvName,
    lookup,
    unit_of_scrape_name,
)
from svc_monitor.otlp.export.series_memory import (
    Attributes,
    AttrValue,
    Descriptor,
    Point,
    ResourceSeries,
    SeriesMemory,
)

if TYPE_CHECKING:
    from prometheus_client.metrics_core import Metric

MONITOR = "svc-monitor"  # the monitor's resource: its service.name and its key
SCOPE = "svc-monitor"
# A node is `valkey` until a poll says otherwise
# (docs/features/otlp-export.md#otlp-export-metrics-and-events).
DEFAULT_ENGINE = "valkey"
_CUMULATIVE = AggregationTemporality.AGGREGATION_TEMPORALITY_CUMULATIVE
_SKIPPED = frozenset({"histogram", "summary", "gaugehistogram"})
_ROLES = {"master": "primary", "slave": "replica", "replica": "replica"}

Requests = list[tuple[str, ExportMetricsServiceRequest]]


def build_requests(
    families: Sequence["Metric"],
    *,
    mode: ExportMode,
    now_ns: int,
    series_memory: SeriesMemory | None = None,
    monitor_instance: str | None = None,
) -> Requests:
    """(resource key, request) pairs: "svc-monitor" and, in mode semconv, one host:port each.

    `series_memory` carries last values and counter start times from one push to the
    next (absent series are re-sent until its bound); without one, only `families` count.
    `monitor_instance` (a replica's id) is the monitor resource's service.instance.id.
    """
    memory = series_memory if series_memory is not None else SeriesMemory(bound_ns=0)
    if mode is ExportMode.SEMCONV:
        resources, points = _SemconvConverter(families, now_ns).convert()
    else:
        resources, points = {MONITOR: _monitor_resource()}, _mirror_points(families)
    if monitor_instance is not None:
        resources[MONITOR] = (*resources[MONITOR], ("service.instance.id", monitor_instance))
    memory.update(resources, points, now_ns=now_ns)
    return [
        (key, _request(attributes, series, now_ns))
        for key, attributes, series in memory.resources()
    ]


# --- mode mirror ---


def _mirror_points(families: Iterable["Metric"]) -> list[Point]:
    points: list[Point] = []
    descriptors: dict[str, Descriptor] = {}
    for family in families:
        if family.type in _SKIPPED:
            continue
        counter = family.type == "counter"
        for sample in family.samples:
            if counter and not sample.name.endswith("_total"):
                continue  # `_created`: the counter's start, not a value
            value = sample.value
            if not math.isfinite(value):
                continue
            descriptor = descriptors.get(sample.name)
            if descriptor is None:
                descriptor = descriptors[sample.name] = Descriptor(
                    sample.name,
                    unit_of_scrape_name(sample.name),
                    family.documentation,
                    counter,
                    _mirror_integer(sample.name, counter),
                )
            points.append((MONITOR, descriptor, tuple(sample.labels.items()), value))
    return points


def _mirror_integer(sample_name: str, counter: bool) -> bool:
    """The same value type as in mode semconv where the value is the same number."""
    entry = lookup(sample_name)
    if entry is not None and entry.conversion is Conversion.PLAIN and entry.scale == 1.0:
        return entry.integer
    if entry is not None:
        # Converted in mode semconv: svc_instance_info is a 1 in both; avg_ttl in seconds
        # and a start timestamp are fractions here.
        return entry.conversion is Conversion.ROLE
    return counter and not unit_of_scrape_name(sample_name)  # a plain count


# --- mode semconv ---


class _SemconvConverter:
    """One push's families -> resources and points with the semconv names (semconv_names.py)."""

    def __init__(self, families: Sequence["Metric"], now_ns: int) -> None:
        self._families = families
        self._now_s = now_ns / 1e9
        self._engines: dict[str, tuple[str, str]] = {}  # connection -> (engine, version)
        self._nodes: dict[str, tuple[str, int] | None] = {}  # connection -> (host, port)
        self._descriptors: dict[tuple[str, str], Descriptor] = {}
        self._entries: dict[str, SemconvName | None] = {}

    def convert(self) -> tuple[dict[str, Attributes], list[Point]]:
        self._learn_engines()
        points: list[Point] = []
        for family in self._families:
            if family.type in _SKIPPED:
                continue
            counter = family.type == "counter"
            for sample in family.samples:
                if counter and not sample.name.endswith("_total"):
                    continue
                if math.isfinite(sample.value):
                    self._convert(family, sample.name, sample.labels, sample.value, points)
        resources = {MONITOR: _monitor_resource()}
        for connection, node in self._nodes.items():
            if node is not None:
                resources[connection] = self._node_resource(connection, *node)
        return resources, points

    def _learn_engines(self) -> None:
        for family in self._families:
            # An info family's name lacks `_info` (prometheus_client strips it).
            if family.name not in ("svc_instance", "svc_instance_info"):
                continue
            for sample in family.samples:
                connection = sample.labels.get("connection")
                engine = sample.labels.get("type")
                if connection and engine in ("valkey", "redis"):
                    self._engines[connection] = (engine, sample.labels.get("version", ""))

    def _convert(
        self,
        family: "Metric",
        sample_name: str,
        labels: dict[str, str],
        value: float,
        points: list[Point],
    ) -> None:
        if sample_name in self._entries:
            entry = self._entries[sample_name]
        else:
            entry = self._entries[sample_name] = lookup(sample_name)
        if entry is not None and entry.conversion is Conversion.DROPPED:
            return
        connection = labels.get("connection")
        node = self._node(connection) if connection is not None else None
        resource = connection if node is not None and connection is not None else MONITOR
        engine = self._engines.get(connection or "", (DEFAULT_ENGINE, ""))[0]
        descriptor = self._descriptor(family, sample_name, entry, engine)
        if entry is None:
            attributes = _plain_attributes(labels, on_node=node is not None)
        elif entry.conversion is Conversion.ROLE:
            role = _ROLES.get(labels.get("role", ""))
            if role is None:
                return  # role not known yet: no point rather than a wrong one
            attributes = (("role", role),)
            if node is None and connection is not None:
                attributes = (("connection", connection), *attributes)
            value = 1.0
        else:
            attributes = _attributes(labels, entry, on_node=node is not None)
            value = (self._now_s - value) if entry.conversion is Conversion.UPTIME else value
            value *= entry.scale
        points.append((resource, descriptor, attributes, value))

    def _descriptor(
        self, family: "Metric", sample_name: str, entry: SemconvName | None, engine: str
    ) -> Descriptor:
        key = (sample_name, engine)
        descriptor = self._descriptors.get(key)
        if descriptor is not None:
            return descriptor
        counter = family.type == "counter"
        if entry is None:
            descriptor = Descriptor(
                sample_name,
                unit_of_scrape_name(sample_name),
                family.documentation,
                counter,
                _mirror_integer(sample_name, counter),
            )
        else:
            descriptor = Descriptor(
                entry.full_name(engine),
                entry.unit,
                entry.description or family.documentation,
                counter,
                entry.integer,
            )
        self._descriptors[key] = descriptor
        return descriptor

    def _node(self, connection: str) -> tuple[str, int] | None:
        if connection not in self._nodes:
            self._nodes[connection] = host_port(connection)
        return self._nodes[connection]

    def _node_resource(self, connection: str, host: str, port: int) -> Attributes:
        detected = self._engines.get(connection)
        engine = detected[0] if detected else DEFAULT_ENGINE
        attributes: list[tuple[str, AttrValue]] = [
            ("service.name", engine),
            ("service.instance.id", connection),
        ]
        if detected:
            attributes.append(("db.system.name", engine))
        attributes += [("server.address", host), ("server.port", port)]
        if detected and detected[1]:
            attributes.append((f"{engine}.version", detected[1]))
        return tuple(attributes)


def _attributes(labels: dict[str, str], entry: SemconvName, *, on_node: bool) -> Attributes:
    if not entry.int_labels:
        return (*_plain_attributes(labels, on_node=on_node), *entry.attributes)
    attributes: list[tuple[str, AttrValue]] = []
    int_labels = dict(entry.int_labels)
    for key, value in labels.items():
        if key in int_labels and value.lstrip("-").isdigit():
            attributes.append((int_labels[key], int(value)))
        elif not (on_node and key == "connection"):
            attributes.append(_plain_attribute(key, value))
    return (*attributes, *entry.attributes)


def _plain_attributes(labels: dict[str, str], *, on_node: bool) -> Attributes:
    return tuple(
        _plain_attribute(key, value)
        for key, value in labels.items()
        if not (on_node and key == "connection")
    )


def _plain_attribute(key: str, value: str) -> tuple[str, AttrValue]:
    if key == "db" and value.startswith("db") and value[2:].isdigit():
        return key, value[2:]  # the receiver's form: "0", not "db0"
    if key == "command":
        return "cmd", value
    return key, value


def host_port(connection: str) -> tuple[str, int] | None:
    """("10.0.0.1", 6379) from "10.0.0.1:6379" (or "[::1]:6379"); None if not host:port."""
    host, colon, port = connection.rpartition(":")
    if not colon or not host or not port.isdigit() or not 0 < int(port) < 65536:
        return None
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host, int(port)


def _monitor_resource() -> Attributes:
    return (("service.name", MONITOR),)


# --- protobuf ---


def _request(
    resource: Attributes, metrics: ResourceSeries, now_ns: int
) -> ExportMetricsServiceRequest:
    request = ExportMetricsServiceRequest()
    resource_metrics = request.resource_metrics.add()
    _set_attributes(resource_metrics.resource.attributes, resource)
    scope_metrics = resource_metrics.scope_metrics.add()
    scope_metrics.scope.name = SCOPE
    scope_metrics.scope.version = __version__
    for by_attributes in metrics.values():
        descriptor = next(iter(by_attributes.values())).descriptor
        metric = scope_metrics.metrics.add(
            name=descriptor.name, description=descriptor.description, unit=descriptor.unit
        )
        if descriptor.monotonic:
            metric.sum.aggregation_temporality = _CUMULATIVE
            metric.sum.is_monotonic = True
            data_points = metric.sum.data_points
        else:
            data_points = metric.gauge.data_points
        integer = descriptor.integer
        for attributes, series in by_attributes.items():
            point = data_points.add(time_unix_nano=now_ns)
            if descriptor.monotonic:
                point.start_time_unix_nano = series.start_ns
            if integer:
                point.as_int = round(series.value)
            else:
                point.as_double = series.value
            _set_attributes(point.attributes, attributes)
    return request


def _set_attributes(target: Any, attributes: Attributes) -> None:
    # `target` is a repeated KeyValue field (no protobuf stubs are installed to name it).
    for key, value in attributes:
        pair = target.add(key=key)
        if isinstance(value, int):
            pair.value.int_value = value
        else:
            pair.value.string_value = value
