"""What the detectors find: anomalies, failovers and lost data (anomaly/), a metric
heading for its ceiling (forecast/), and a vulnerable version (cve/).

Each detector keeps its own hysteresis or publishes once per finding, so every one of
these fires each time its bus event is published.
"""

from dataclasses import dataclass
from typing import Any

from svc_monitor.event_types.base import Data, EventType, clip, event_type, fields_of, number
from svc_monitor.events import InstanceEvent


@dataclass(frozen=True, slots=True, kw_only=True)
class AnomalyDetected(InstanceEvent):
    """A metric far from its baseline (z-score); published by the anomaly detector."""

    anomaly_id: str
    metric_type: str
    anomaly_type: str  # spike | drop
    severity: str  # info | warning | critical
    value: float
    baseline: float
    std_dev: float
    z_score: float
    threshold: float
    message: str
    # Set by the anomaly detector, which publishes one event per correlated group: the
    # group's pattern (memory_pressure, traffic_burst ...) and its members' metrics.
    pattern: str | None = None
    related_metrics: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class FailoverStarted(InstanceEvent):
    """A primary became a replica (the anomaly detector's role-change rule)."""

    previous_role: str  # primary | replica
    new_role: str


@dataclass(frozen=True, slots=True, kw_only=True)
class FailoverCompleted(InstanceEvent):
    """A replica became a primary: promoted (the anomaly detector's role-change rule)."""

    previous_role: str
    new_role: str


@dataclass(frozen=True, slots=True, kw_only=True)
class DataLossDetected(InstanceEvent):
    """The dataset vanished: a primary restarted empty, or a replica was wiped by a full
    sync from a new primary (detection/anomaly/rules.py, rules A and B)."""

    kind: str  # primary_restarted_empty | replica_wiped
    previous_keys: int
    current_keys: int
    previous_replid: str | None
    new_replid: str | None
    connected_slaves: int | None
    role: str  # primary | replica


@dataclass(frozen=True, slots=True, kw_only=True)
class MetricForecastLimit(InstanceEvent):
    """A metric's projected time to its ceiling fell to its alert threshold or under
    (forecast/service.py); published once per crossing, the forecast keeps the hysteresis."""

    metric_kind: str  # usedMemory | opsPerSec | cpuTotal | memFragmentation
    current_value: float
    ceiling: float
    time_to_limit_ms: int
    growth_rate: float  # units of the metric per hour
    alert_threshold_ms: int


@dataclass(frozen=True, slots=True, kw_only=True)
class CveDetected(InstanceEvent):
    """A CVE (or another advisory) newly applies to the connection's engine version;
    published once per advisory and connection by the CVE scanner (cve/service.py)."""

    advisory_id: str
    severity: str  # critical | high | medium | low
    cvss: float | None
    kev: bool
    engine: str
    version: str
    fixed_in: str | None
    summary: str
    ghsa: str | None = None


def _anomaly(e: AnomalyDetected) -> Data:
    """a correlated group of anomalies on one connection, one per group; the payload adds `pattern`
    and `relatedMetrics`"""
    data = {
        "anomalyId": e.anomaly_id,
        "metricType": e.metric_type,
        "anomalyType": e.anomaly_type,
        "severity": e.severity,
        "value": e.value,
        "baseline": e.baseline,
        "stdDev": e.std_dev,
        "zScore": e.z_score,
        "threshold": e.threshold,
        "message": clip(e.message),
        "timestamp": e.at_ms,
    }
    if e.pattern is not None:  # one event per correlated group (anomaly/service.py)
        data["pattern"] = e.pattern
        data["relatedMetrics"] = list(e.related_metrics)
    return data


ANOMALY_DETECTED = event_type(
    _anomaly,
    name="anomaly.detected",
    order=100,
    tier="pro",
    example=AnomalyDetected(
        connection_id="c1",
        anomaly_id="a1",
        metric_type="memory_used",
        anomaly_type="spike",
        severity="warning",
        value=900.0,
        baseline=500.0,
        std_dev=50.0,
        z_score=8.0,
        threshold=3.0,
        message="memory_used spiked",
        pattern="memory_pressure",
        related_metrics=("memory_used", "evicted_keys"),
    ),
)


# The state both failover types report: the node's role (stepped down: a replica;
# promoted: a primary).
ROLE = "role"


def _failover_started(e: FailoverStarted) -> Data:
    """anomaly detection saw a primary become a replica (`role:master` -> `role:slave`), once per
    change

    Fires when anomaly detection sees a primary become a replica: `{previousRole, newRole,
    message, timestamp}` (roles `primary` / `replica`)."""
    return {
        "previousRole": e.previous_role,
        "newRole": e.new_role,
        "message": f"Node stepped down from {e.previous_role} to {e.new_role}: failover started",
        "timestamp": e.at_ms,
    }


# Anomaly detection's rule detectors (detection/anomaly/rules.py): a role change, and a primary
# restarted empty or a replica wiped. A primary stepping down, and lost data, are errors;
# a promotion is the failover's end.
FAILOVER_STARTED = event_type(
    _failover_started,
    name="failover.started",
    order=140,
    tier="pro",
    severity="error",
    state=ROLE,
    example=FailoverStarted(connection_id="c1", previous_role="primary", new_role="replica"),
)


def _failover_completed(e: FailoverCompleted) -> Data:
    """anomaly detection saw a replica become a primary (promoted, e.g. `REPLICAOF NO ONE`), once
    per change

    Fires when anomaly detection sees a replica become a primary: the same payload as
    `failover.started`."""
    return {
        "previousRole": e.previous_role,
        "newRole": e.new_role,
        "message": f"Node promoted from {e.previous_role} to {e.new_role}: failover completed",
        "timestamp": e.at_ms,
    }


FAILOVER_COMPLETED = event_type(
    _failover_completed,
    name="failover.completed",
    order=150,
    tier="pro",
    state=ROLE,
    example=FailoverCompleted(connection_id="c1", previous_role="replica", new_role="primary"),
)


def _data_loss(e: DataLossDetected) -> Data:
    """anomaly detection's data-loss rules: a primary restarted empty, or a replica wiped by a full
    sync

    Fires when a primary restarted empty (`kind` `primary_restarted_empty`) or a replica's keys
    were wiped by a full sync from a new replication history (`replica_wiped`): `{kind,
    previousKeys, currentKeys, previousReplid, newReplid, connectedSlaves, role, message,
    timestamp}`."""
    what = (
        "primary restarted empty"
        if e.kind == "primary_restarted_empty"
        else "replica wiped by a full sync from a new primary"
    )
    return fields_of(
        e,
        *("kind", "previous_keys", "current_keys", "previous_replid", "new_replid"),
        *("connected_slaves", "role"),
        message=f"Data loss: {what} ({e.previous_keys} keys -> {e.current_keys})",
        timestamp=e.at_ms,
    )


DATA_LOSS_DETECTED = event_type(
    _data_loss,
    name="data.loss.detected",
    order=160,
    tier="pro",
    severity="error",
    example=DataLossDetected(
        connection_id="c1",
        kind="primary_restarted_empty",
        previous_keys=120_000,
        current_keys=0,
        previous_replid="8c1e0f",
        new_replid="a4d2b9",
        connected_slaves=0,
        role="primary",
    ),
)


def _forecast_limit(e: MetricForecastLimit) -> Data:
    """a metric's projected time to its ceiling fell to its `alertThresholdMs` (default 2 h) or
    under; checked every 60 s

    Fires once when a metric's projected time to its ceiling (forecast/) falls to its
    `alertThresholdMs` or under, and again only after it has been above `alertThresholdMs x 1.1`:
    `{metricKind, currentValue, ceiling, timeToLimitMs, growthRate, alertThresholdMs, message,
    timestamp}` (`growthRate` in the metric's units per hour)."""
    hours = e.time_to_limit_ms / 3_600_000
    when = "" if e.time_to_limit_ms == 0 else f" in {hours:.1f} h"
    reach = "has reached" if e.time_to_limit_ms == 0 else "is projected to reach"
    return fields_of(
        e,
        *("metric_kind", "current_value", "ceiling", "time_to_limit_ms", "growth_rate"),
        "alert_threshold_ms",
        message=f"{e.metric_kind} {reach} its ceiling {number(e.ceiling)}{when}",
        timestamp=e.at_ms,
    )


# Capacity forecasting (forecast/): a metric's projected time to its ceiling fell under
# its alert threshold.
METRIC_FORECAST_LIMIT = event_type(
    _forecast_limit,
    name="metric_forecast.limit",
    order=130,
    tier="pro",
    example=MetricForecastLimit(
        connection_id="c1",
        metric_kind="usedMemory",
        current_value=400_000_000.0,
        ceiling=536_870_912.0,
        time_to_limit_ms=5_400_000,
        growth_rate=90_000_000.0,
        alert_threshold_ms=7_200_000,
    ),
)


def _cve(e: CveDetected) -> Data:
    """a CVE or advisory newly found for a connection's version, once per advisory and connection

    Named by us; fires once per CVE or advisory newly found for a connection's engine version
    (cve/), never again on rescans: `{cveId, ghsa, severity, cvss, kev, engine, version, fixedIn,
    summary, message, timestamp}`."""
    name = "Valkey" if e.engine == "valkey" else "Redis"
    fix = f"fixed in {e.fixed_in}" if e.fixed_in else "no fixed release yet"
    kev = ", known exploited (CISA KEV)" if e.kev else ""
    return {
        "cveId": e.advisory_id,
        "ghsa": e.ghsa,
        "severity": e.severity,
        "cvss": e.cvss,
        "kev": e.kev,
        "engine": e.engine,
        "version": e.version,
        "fixedIn": e.fixed_in,
        "summary": clip(e.summary),
        "message": f"{e.advisory_id} ({e.severity}{kev}) affects {name} {e.version}; {fix}",
        "timestamp": e.at_ms,
    }


# Named by us, like cluster.bus.corruption (anomaly.detected's shape). Community: CVE
# scanning is free on every tier, and being told a server is exploitable must not be a
# paid extra. WARN, or ERROR for a critical CVE (the payload's severity).
CVE_DETECTED = event_type(
    _cve,
    name="cve.detected",
    order=170,
    tier="community",
    example=CveDetected(
        connection_id="c1",
        advisory_id="CVE-2025-49844",
        severity="critical",
        cvss=9.9,
        kev=False,
        engine="valkey",
        version="8.1.3",
        fixed_in="8.1.4",
        summary="A Lua script may lead to remote code execution.",
    ),
)


# In the order one bus event's notifications come out (table.candidates).
EVENT_TYPES: tuple[EventType[Any], ...] = (
    ANOMALY_DETECTED,
    METRIC_FORECAST_LIMIT,
    FAILOVER_STARTED,
    FAILOVER_COMPLETED,
    DATA_LOSS_DETECTED,
    CVE_DETECTED,
)
