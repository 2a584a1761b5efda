"""One pushed resource's points into its connection's PushedFields, with the tally of
what was taken and dropped (by reason) that the receiver answers and counts.

This is the per-point half of /v1/external/metrics: a request near the size limit holds
some 20,000 points, so the loops here read each point once and leave per-metric work
(name lookup, shape, section) out of them. Which field a point lands in is
otlp/ingest/mapping.py's business; how long it stays is otlp/ingest/fields.py's.
"""

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from svc_monitor.engine.info import Scalar
from svc_monitor.otlp.ingest.fields import PushedFields
from svc_monitor.otlp.ingest.mapping import (
    ATTRIBUTE_OF,
    PERCENTILES,
    Shape,
    Target,
    attribute_name,
    lookup,
)

if TYPE_CHECKING:
    from opentelemetry.proto.common.v1.common_pb2 import KeyValue
    from opentelemetry.proto.metrics.v1.metrics_pb2 import Metric, NumberDataPoint

_CUMULATIVE = 2  # AggregationTemporality.AGGREGATION_TEMPORALITY_CUMULATIVE (metrics.proto)


@dataclass(slots=True)
class Tally:
    """One export request's points: the time they are received at, what was taken and
    what was dropped."""

    now_ms: int
    now_ns: int
    accepted: int = 0
    dropped: Counter[str] = field(default_factory=Counter)
    # Attribute text -> field or entry name (push_mapping.attribute_name), by shape. A
    # Collector sends the same states, databases and commands for every instance, so each
    # text is worked out once per request; bounded by the request, and dropped with it.
    names: dict[Shape, dict[str, str | None]] = field(
        default_factory=lambda: {shape: {} for shape in ATTRIBUTE_OF}
    )


def take_metrics(fields: PushedFields, metrics: Iterable["Metric"], tally: Tally) -> bool:
    """Map every point of one resource's metrics; True when a mapped metric's name is a
    `valkey.*` one."""
    valkey_named = False
    dropped, now_ms, now_ns = tally.dropped, tally.now_ms, tally.now_ns
    taken = 0
    for metric in metrics:
        kind = metric.WhichOneof("data")
        if kind == "gauge":
            points = metric.gauge.data_points
        elif kind == "sum" and (data := metric.sum).aggregation_temporality == _CUMULATIVE:
            points = data.data_points
        else:
            _drop_unsupported(metric, kind, dropped)
            continue
        found = lookup(metric.name)
        if found is None:
            dropped["unmapped_metric"] += len(points)
            continue
        engine, target = found
        valkey_named |= engine == "valkey"
        if target.shape == "latency":
            taken += _take_latency(fields, points, tally)
            continue
        if target.shape != "plain":
            taken += _take_attributed(fields, target, points, tally)
            continue
        # A metric of one field, most often with one point: its loop is here rather than
        # in a function of its own, whose call cost ~4 % of a many-instances request.
        section, name, decimal = target.section, target.field, target.decimal
        # A slice, not the container: iterating upb's container ends in an IndexError,
        # which costs more than copying the point list.
        for point in points[:]:
            # as_int reads 0 when the point holds something else, so only a 0 needs to
            # ask which kind it holds: one WhichOneof fewer for most points.
            value: Scalar | None = point.as_int
            if not value:
                value = _other_value(point, decimal)
            if value is None:
                dropped["invalid_value"] += 1
                continue
            at_ns = point.time_unix_nano
            if at_ns > now_ns or at_ns == 0:
                at_ns = now_ns  # from the future (or unset): counts as received now
            fields.put(section, name, value, at_ns, now_ms)
            taken += 1
    tally.accepted += taken
    return valkey_named


def _drop_unsupported(metric: "Metric", kind: str | None, dropped: Counter[str]) -> None:
    """Count the points of a metric that is neither a gauge nor a cumulative sum."""
    if kind == "sum":
        dropped["unsupported_temporality"] += len(metric.sum.data_points)
    elif kind is not None:  # histogram, exponential histogram, summary
        dropped["unsupported_type"] += point_count(metric)


def _take_attributed(
    fields: PushedFields, target: Target, points: Sequence["NumberDataPoint"], tally: Tally
) -> int:
    """cpu/role/db/cmd points, whose attribute picks the field or entry; the number taken."""
    shape, section, name_of, decimal = target.shape, target.section, target.field, target.decimal
    key, names = ATTRIBUTE_OF[shape], tally.names[shape]
    now_ms, now_ns, dropped = tally.now_ms, tally.now_ns, tally.dropped
    composite = fields.composite(section) if shape in ("db", "cmd") else None
    taken = 0
    for point in points[:]:  # see take_metrics
        value: Scalar | None = point.as_int
        if not value:  # see take_metrics
            value = _other_value(point, decimal)
        if value is None:
            dropped["invalid_value"] += 1
            continue
        at_ns = point.time_unix_nano
        if at_ns > now_ns or at_ns == 0:
            at_ns = now_ns  # from the future (or unset): counts as received now
        text = string_attribute(point.attributes, key)
        if text is None:
            dropped["unmapped_metric"] += 1
            continue
        name = names.get(text, _UNSEEN)
        if name is _UNSEEN:  # the first of this text in the request
            name = names[text] = attribute_name(shape, text)
        if name is None:
            dropped["unmapped_metric"] += 1
            continue
        if composite is not None:  # db/cmd: `name` is the entry
            if not composite.put(name, name_of, value, at_ns, now_ms):
                dropped["cardinality_limit"] += 1
                continue
        elif shape == "cpu":  # `name` is the field
            fields.put(section, name, float(value), at_ns, now_ms)
        elif value == 1:  # role: `name` is the value
            fields.put(section, name_of, name, at_ns, now_ms)
        else:
            continue  # the other role's 0: skipped, not counted as a drop
        taken += 1
    return taken


def _take_latency(fields: PushedFields, points: Sequence["NumberDataPoint"], tally: Tally) -> int:
    """`cmd.latency` points: seconds, by `cmd` and `percentile`, into INFO latencystats'
    `latency_percentiles_usec_<cmd>` entries as microseconds (`p50=1.003`); the number
    taken. Few points (three per command, and off by default), so no per-request memo."""
    composite = fields.composite("latencystats")
    now_ms, now_ns, dropped = tally.now_ms, tally.now_ns, tally.dropped
    taken = 0
    for point in points[:]:  # see take_metrics
        seconds = _other_value(point, True) if not point.as_int else point.as_int
        if not isinstance(seconds, int | float) or seconds < 0:
            dropped["invalid_value"] += 1
            continue
        command = string_attribute(point.attributes, "cmd")
        percentile = string_attribute(point.attributes, "percentile")
        entry = attribute_name("latency", command) if command else None
        if entry is None or percentile not in PERCENTILES:
            dropped["unmapped_metric"] += 1
            continue
        at_ns = point.time_unix_nano
        if at_ns > now_ns or at_ns == 0:
            at_ns = now_ns  # from the future (or unset): counts as received now
        # INFO prints three decimals; rounding also drops the float noise of * 1e6.
        usec = round(float(seconds) * 1_000_000, 3)
        if not composite.put(entry, percentile, usec, at_ns, now_ms):
            dropped["cardinality_limit"] += 1
            continue
        taken += 1
    return taken


# Past this a double is no reading (what INFO's 64-bit counters can reach).
_LARGEST = float(2**63)

# Never a name: attribute_name() answers None rather than "".
_UNSEEN = ""


def _other_value(point: "NumberDataPoint", decimal: bool) -> Scalar | None:
    """The value of a point whose as_int reads 0, as INFO keeps the field: a whole double
    is an int unless the field is a decimal one. None when the point has no value, or one
    no reading has: not finite, or past 2**63 (finite, yet its square overflows what the
    anomaly baselines sum)."""
    which = point.WhichOneof("value")
    if which == "as_int":
        return 0
    if which != "as_double":
        return None
    number = point.as_double
    if not math.isfinite(number) or not -_LARGEST < number < _LARGEST:
        return None
    return number if decimal or not number.is_integer() else int(number)


def point_count(metric: "Metric") -> int:
    kind = metric.WhichOneof("data")
    if kind is None:
        return 0
    points: list[object] = getattr(metric, kind).data_points
    return len(points)


def string_attribute(attributes: Iterable["KeyValue"], key: str) -> str | None:
    """An attribute's text (an int one as digits); None when absent or of another kind."""
    for attribute in attributes:
        if attribute.key == key:
            value = attribute.value
            text = value.string_value
            if text:  # the usual case, and one WhichOneof fewer: a oneof holds one kind
                return text
            kind = value.WhichOneof("value")
            if kind == "string_value":
                return text
            if kind == "int_value":
                return str(value.int_value)
            return None
    return None
