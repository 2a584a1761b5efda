"""The anomaly detectors' plain data: a metric's detection rule, one detection, the state
of a metric's baseline."""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from svc_monitor.engine.info import ParsedInfo
from svc_monitor.events import InstanceEvent

Severity = Literal["warning", "critical"]
Kind = Literal["spike", "drop"]
# gauge: the value as read; rate: a counter turned into a per-second rate between two
# observations; ratio: hits / (hits + misses) of the counters' deltas.
Reading = Literal["gauge", "rate", "ratio"]
SEVERITY_RANK = {"warning": 1, "critical": 2}
# Samples each metric's baseline keeps, and how many it needs before it judges.
WINDOW = 300
READY_AT = 30


@dataclass(frozen=True, slots=True)
class MetricSpec:
    """How one metric is read from INFO and judged against its rolling baseline.

    `floor_abs` and `floor_rel` bound the standard deviation from below: on a very steady
    metric the window's stddev is near 0 and any wobble would be a huge z. The z used is
    (x - mean) / max(stddev, floor_abs, floor_rel * |mean|), so a change must also be
    big in absolute and relative terms before it is unusual.
    """

    name: str
    read: Callable[[ParsedInfo], float | None]
    reading: Reading = "gauge"
    warning_z: float = 3.0
    critical_z: float = 5.0
    consecutive: int = 3
    cooldown_ms: int = 60_000
    drops: bool = False  # also report values far under the baseline
    spikes: bool = True  # False where a rise is good news (the hit ratio)
    floor_abs: float = 0.0
    floor_rel: float = 0.05


@dataclass(frozen=True, slots=True)
class Detection:
    """One anomaly: a metric far from its baseline for `consecutive` samples in a row."""

    connection_id: str
    metric: str
    kind: Kind
    severity: Severity
    value: float
    baseline: float
    stddev: float
    z_score: float
    threshold: float
    at_ms: int
    message: str
    # A webhook event of its own that a rule detection carries (failover.started,
    # data.loss.detected ...): the service publishes it at once, beside the group's
    # anomaly.detected.
    notice: InstanceEvent | None = None


@dataclass(frozen=True, slots=True)
class BufferState:
    metric: str
    samples: int
    ready: bool
    mean: float | None
    stddev: float | None
