"""A connection's detector state as it travels between replicas: each metric's baseline
(sample count, mean and variance, the only moments judge() reads) with its firing state,
and the rule detectors' memory (role, master link, the dataset data loss compares with,
cooldowns).

The replica that polls a connection saves this every SAVE_EVERY_S, and soon after a
detection (its cooldown must travel); the replica that takes the connection over reads
it before its first poll, so its detection carries on instead of warming up again for
READY_AT samples, and a detection still cooling down does not fire a second time. About
2 KB per connection. What does not travel: the feed detectors (slow log, latency,
commandstats, cluster), the raw counters of the last poll (the first rate after a
takeover is skipped, as after any gap), and an open correlation window (a detection the
old holder had not yet published is found again, if it is still true).
"""

import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from svc_monitor.detection.anomaly.detectors import METRICS, WINDOW, ConnectionDetectors

VERSION = 1
SAVE_EVERY_S = 30.0
# A baseline older than this no longer describes the server (the window is five minutes
# at the default poll): the new holder warms up afresh instead.
MAX_AGE_MS = 15 * 60_000
_NAMES = frozenset(spec.name for spec in METRICS)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class _Buffer(_Strict):
    count: int = Field(ge=1, le=WINDOW)
    mean: float
    variance: float = Field(ge=0)
    cooldownUntil: int
    run: int = Field(ge=0)
    runKind: Literal["spike", "drop"]


class _Dataset(_Strict):
    role: str
    keys: int
    run_id: str | None
    replid: str | None
    uptime: float | None
    offset: float | None


class _Rules(_Strict):
    role: str | None
    linkUp: bool | None
    cooldown: dict[str, int]
    overheadFired: Literal["warning", "critical"] | None
    dataset: _Dataset | None


class Carried(_Strict):
    version: Literal[1]
    savedAt: int
    metrics: dict[str, _Buffer]
    rules: _Rules


def carried(detectors: ConnectionDetectors, saved_at_ms: int) -> dict[str, Any]:
    """The state to save (JSON-ready); a metric whose moments are not finite is left out."""
    metrics: dict[str, Any] = {}
    for name, buffer in detectors.buffers.items():
        count = len(buffer.values)
        if not count:
            continue
        mean, variance = buffer.moments()
        if not (math.isfinite(mean) and math.isfinite(variance)):
            continue
        metrics[name] = {
            "count": count,
            "mean": mean,
            "variance": variance,
            "cooldownUntil": buffer.cooldown_until,
            "run": buffer.run,
            "runKind": buffer.run_kind,
        }
    return {
        "version": VERSION,
        "savedAt": saved_at_ms,
        "metrics": metrics,
        "rules": detectors.rules.carried(),
    }


def carry_on(connection_id: str, state: object, *, now_ms: int) -> ConnectionDetectors | None:
    """Detectors that carry on from a saved state; None for one too old, of another
    version or not readable (the new holder then warms up afresh)."""
    try:
        saved = Carried.model_validate(state)
    except ValidationError:
        return None
    if now_ms - saved.savedAt > MAX_AGE_MS:
        return None
    detectors = ConnectionDetectors(connection_id)
    for name, kept in saved.metrics.items():
        if name not in _NAMES:
            continue  # a metric this release no longer judges
        buffer = detectors.buffers[name]
        buffer.seed(kept.count, kept.mean, kept.variance)
        buffer.cooldown_until = kept.cooldownUntil
        buffer.run = kept.run
        buffer.run_kind = kept.runKind
    detectors.rules.carry_on(saved.rules.model_dump())
    return detectors
