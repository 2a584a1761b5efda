"""Anomaly detection's correlation data: a pattern a group of detections matches, and the
window that groups one connection's detections. What one detection is lives with the
detectors (detection/anomaly/models.py)."""

from dataclasses import dataclass, field

from svc_monitor.detection.anomaly.models import Detection


@dataclass(frozen=True, slots=True)
class Pattern:
    name: str
    diagnosis: str
    recommendation: str


@dataclass(slots=True)
class Window:
    """Detections of one connection within the correlation window of its first."""

    started_ms: int
    opened_monotonic: float  # of the latest detection: a quiet connection's window closes
    detections: list[Detection] = field(default_factory=list)
    last_ms: int = 0  # the latest detection's time
