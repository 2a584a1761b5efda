"""What the metrics export remembers between pushes: last values, start times, resources.

The registry forgets a series as soon as its connection is stale or removed, or a node
changes role; the export keeps sending it with its last value until it has been absent for
the bound (max(PROMETHEUS_STALENESS_MS, two export intervals)), so a backend sees it end
cleanly instead of flickering, then drops it (a removed connection's points are dropped,
never moved to another resource). A series that comes back is exported again at once.

Counters become cumulative sums whose start time is when the export first saw them, reset
to that push's time when the value goes down (an engine restart or a CONFIG RESETSTAT).
"""

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

AttrValue = str | int
Attributes = tuple[tuple[str, AttrValue], ...]


@dataclass(frozen=True, slots=True)
class Descriptor:
    """One OTLP metric: name, unit, description, shape and value type."""

    name: str
    unit: str
    description: str
    monotonic: bool  # a counter: cumulative monotonic Sum; else a Gauge
    integer: bool  # asInt; else asDouble


# (resource key, metric, point attributes, value)
Point = tuple[str, Descriptor, Attributes, float]


@dataclass(slots=True)
class Series:
    descriptor: Descriptor
    value: float
    seen_ns: int
    start_ns: int


# metric name -> point attributes -> series
ResourceSeries = dict[str, dict[Attributes, Series]]


class SeriesMemory:
    """Series by resource, kept `bound_ns` after they were last in the registry."""

    def __init__(self, *, bound_ns: int) -> None:
        self.bound_ns = bound_ns
        self._series: dict[str, ResourceSeries] = {}
        self._resources: dict[str, Attributes] = {}

    def __len__(self) -> int:
        return sum(len(points) for metrics in self._series.values() for points in metrics.values())

    def update(
        self, resources: dict[str, Attributes], points: Iterable[Point], *, now_ns: int
    ) -> None:
        """Take this push's points; forget what has been absent longer than the bound."""
        self._resources.update(resources)
        for resource, descriptor, attributes, value in points:
            metrics = self._series.get(resource)
            if metrics is None:
                metrics = self._series[resource] = {}
            by_attributes = metrics.get(descriptor.name)
            if by_attributes is None:
                by_attributes = metrics[descriptor.name] = {}
            known = by_attributes.get(attributes)
            if known is None:
                by_attributes[attributes] = Series(descriptor, value, now_ns, now_ns)
                continue
            if descriptor.monotonic and value < known.value:
                known.start_ns = now_ns  # the counter went back: a new run starts now
            known.descriptor, known.value, known.seen_ns = descriptor, value, now_ns
        self._expire(now_ns - self.bound_ns)

    def resources(self) -> Iterator[tuple[str, Attributes, ResourceSeries]]:
        """Every resource with series to export, in a stable order."""
        for key in sorted(self._series):
            yield key, self._resources.get(key, ()), self._series[key]

    def _expire(self, oldest_ns: int) -> None:
        for resource in list(self._series):
            metrics = self._series[resource]
            for name in list(metrics):
                by_attributes = metrics[name]
                gone = [a for a, series in by_attributes.items() if series.seen_ns < oldest_ns]
                for attributes in gone:
                    del by_attributes[attributes]
                if not by_attributes:
                    del metrics[name]
            if not metrics:
                del self._series[resource]
                self._resources.pop(resource, None)
