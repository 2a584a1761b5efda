"""Which notifications a bus event can become, and each one's `data` payload.

A notification is named by its webhook event type (`instance.down`, ...). Both consumers
of the bus that tell people use this one table: webhooks (webhooks/dispatcher.py) and
the OTLP event export (otlp/export/events.py).

Two kinds of notification come out of an event:
- occurrences (instance.down/up, client.blocked, cluster.failover, cluster.bus.corruption,
  anomaly.detected, acl.violation, audit.policy.violation, acl.modified, config.changed,
  metric_forecast.limit: its detector keeps its own hysteresis; cve.detected: the scanner
  publishes it once per advisory and connection; failover.started/completed and
  data.loss.detected: the anomaly detector publishes them once per transition) fire every
  time;
- threshold notifications come from readings (memory, clients, replication, slow log,
  latency): each carries the measured value and, per webhook, the level it is judged
  against (that webhook's `thresholds`, or the automatic baseline when a spike
  threshold is 0). alerts.py beside this module adds the hysteresis.

The spec leaves the latency.spike, connection.spike and cluster.bus.corruption payloads
(and the last one's name) open; ours are documented
in the README (and in OpenAPI's description of the webhooks tag). Strings that come
from a server (user names, keys, config values) are clipped so one event can never
make a huge body.
"""

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from svc_monitor.events import (
    AclDenied,
    AclModified,
    AnomalyDetected,
    ClientsReading,
    ClusterBusCorruption,
    ClusterStateChanged,
    ConfigChanged,
    CveDetected,
    DataLossDetected,
    Event,
    FailoverCompleted,
    FailoverStarted,
    InstanceDown,
    InstanceUp,
    LatencyReading,
    MemoryReading,
    MetricForecastLimit,
    ReplicationReading,
    SlowlogLength,
)
from svc_monitor.notifications.schemas import Thresholds

MAX_TEXT = 1024  # characters of any one server-provided string in a payload

Data = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Occurrence:
    """A notification that fires whenever its event happens."""

    event_type: str
    data: Data


@dataclass(frozen=True, slots=True)
class Measured:
    """A notification that fires when `value` crosses a webhook's level for it."""

    event_type: str
    value: float
    # The level for one webhook's thresholds, or None when there is none yet (an
    # automatic baseline still learning).
    level: Callable[[Thresholds], float | None]
    # The data payload for the level that was crossed.
    data: Callable[[float], Data]


Candidate = Occurrence | Measured


def candidates(event: Event) -> list[Candidate]:
    """Every notification `event` may turn into; empty for events webhooks ignore."""
    build = _BUILDERS.get(type(event))
    return build(event) if build is not None else []


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat().replace("+00:00", "Z")


def _clip(text: str) -> str:
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + "..."


def _pct(part: int, whole: int) -> float:
    return round(part / whole * 100, 2)


def _instance_down(e: Any) -> list[Candidate]:
    assert isinstance(e, InstanceDown)
    data = {"message": _clip(e.message), "reason": e.reason, "detectedAt": _iso(e.at_ms)}
    return [Occurrence("instance.down", data)]


def _instance_up(e: Any) -> list[Candidate]:
    assert isinstance(e, InstanceUp)
    if e.down_since_ms is None:
        return []  # first contact after start: nothing recovered, nothing to announce
    seconds = max(0, (e.at_ms - e.down_since_ms) // 1000)
    data = {
        "message": f"Instance is reachable again after {seconds} s down",
        "reason": "recovered",
        "detectedAt": _iso(e.at_ms),
        "downSince": _iso(e.down_since_ms),
    }
    return [Occurrence("instance.up", data)]


def _memory(e: Any) -> list[Candidate]:
    assert isinstance(e, MemoryReading)
    if e.maxmemory <= 0:
        return []  # no limit: a percentage of nothing means nothing
    used, limit = e.used_memory, e.maxmemory
    pct = _pct(used, limit)

    def critical(threshold: float) -> Data:
        return {
            "metric": "memory_used_percent",
            "value": pct,
            "threshold": threshold,
            "maxmemory": limit,
            "usedMemory": used,
            "message": f"Memory usage {pct}% of maxmemory is above {threshold:g}%",
        }

    found: list[Candidate] = [
        Measured("memory.critical", pct, _level("memoryCriticalPercent"), critical)
    ]
    policy = e.maxmemory_policy
    if policy == "noeviction":

        def compliance(threshold: float) -> Data:
            return {
                "complianceType": "memory_noeviction",
                "severity": "critical" if pct >= 95 else "warning",
                "memoryUsedPercent": pct,
                "maxmemoryPolicy": policy,
                "threshold": threshold,
                "message": (
                    f"Memory usage {pct}% is above {threshold:g}% with maxmemory-policy "
                    "noeviction: writes will fail once maxmemory is reached"
                ),
                "timestamp": e.at_ms,
            }

        level = _level("complianceMemoryPercent")
        found.append(Measured("compliance.alert", pct, level, compliance))
    return found


def _clients(e: Any) -> list[Candidate]:
    assert isinstance(e, ClientsReading)
    found: list[Candidate] = []
    connected, limit = e.connected_clients, e.maxclients
    if limit:
        pct = _pct(connected, limit)

        def critical(threshold: float) -> Data:
            return {
                "metric": "connected_clients_percent",
                "value": pct,
                "threshold": threshold,
                "maxClients": limit,
                "connectedClients": connected,
                "message": f"{connected} clients are {pct}% of maxclients, above {threshold:g}%",
            }

        level = _level("connectionCriticalPercent")
        found.append(Measured("connection.critical", pct, level, critical))
    automatic = e.spike_level

    def spike_level(t: Thresholds) -> float | None:
        return float(t.connectionSpikeCount) if t.connectionSpikeCount > 0 else automatic

    def spike(threshold: float) -> Data:
        return {
            "connectedClients": connected,
            "threshold": round(threshold, 2),
            "baseline": round(e.baseline, 2) if e.baseline is not None else None,
            "detection": "automatic" if threshold == automatic else "threshold",
            "message": f"{connected} connected clients, above the spike level {threshold:.0f}",
            "timestamp": e.at_ms,
        }

    found.append(Measured("connection.spike", connected, spike_level, spike))
    return found


def _replication(e: Any) -> list[Candidate]:
    assert isinstance(e, ReplicationReading)

    def lag(threshold: float) -> Data:
        return {
            "lagSeconds": e.lag_seconds,
            "threshold": threshold,
            "masterLinkStatus": e.master_link_status,
            "message": f"Replication lag {e.lag_seconds:g} s is above {threshold:g} s",
            "timestamp": e.at_ms,
        }

    return [Measured("replication.lag", e.lag_seconds, _level("replicationLagSeconds"), lag)]


def _slowlog(e: Any) -> list[Candidate]:
    assert isinstance(e, SlowlogLength)

    def count(threshold: float) -> Data:
        return {
            "slowlogCount": e.length,
            "threshold": int(threshold),
            "message": f"The slow log holds {e.length} entries, above {threshold:g}",
            "timestamp": e.at_ms,
        }

    return [Measured("slowlog.threshold", e.length, _level("slowlogCount"), count)]


def _latency(e: Any) -> list[Candidate]:
    assert isinstance(e, LatencyReading)
    automatic = e.spike_level_ms

    def level(t: Thresholds) -> float | None:
        return float(t.latencySpikeMs) if t.latencySpikeMs > 0 else automatic

    def spike(threshold: float) -> Data:
        return {
            "latencyMs": round(e.latency_ms, 3),
            "threshold": round(threshold, 3),
            "baselineMs": round(e.baseline_ms, 3) if e.baseline_ms is not None else None,
            "detection": "automatic" if threshold == automatic else "threshold",
            "message": (f"Mean command latency {e.latency_ms:.2f} ms is above {threshold:.2f} ms"),
            "timestamp": e.at_ms,
        }

    return [Measured("latency.spike", e.latency_ms, level, spike)]


def _cluster(e: Any) -> list[Candidate]:
    assert isinstance(e, ClusterStateChanged)
    data = {
        "clusterState": e.state,
        "previousState": e.previous_state,
        "slotsAssigned": e.slots_assigned,
        "slotsFailed": e.slots_failed,
        "knownNodes": e.known_nodes,
        "message": (
            f"Cluster state {e.previous_state} -> {e.state}; "
            f"{e.slots_failed} of {e.slots_assigned} assigned slots failing"
        ),
        "timestamp": e.at_ms,
    }
    return [Occurrence("cluster.failover", data)]


def _cluster_bus(e: Any) -> list[Candidate]:
    assert isinstance(e, ClusterBusCorruption)
    corrupt = sum(e.increases.values())
    counters = ", ".join(f"{name} +{n}" for name, n in sorted(e.increases.items()))
    data = {
        "corruptMessages": corrupt,
        "increases": dict(e.increases),
        "totals": dict(e.totals),
        "clusterState": e.state,
        "knownNodes": e.known_nodes,
        "message": f"Cluster bus discarded {corrupt} corrupt messages since the last read "
        f"({counters})",
        "timestamp": e.at_ms,
    }
    return [Occurrence("cluster.bus.corruption", data)]


def _acl_denied(e: Any) -> list[Candidate]:
    assert isinstance(e, AclDenied)
    user, client = _clip(e.username), _clip(e.client_info)
    if e.reason == "auth":
        data = {
            "reason": "auth",
            "username": user,
            "clientInfo": client,
            "count": e.count,
            "timestamp": e.timestamp_s,
            "message": f"Authentication failed for user '{user}' from {client} ({e.count}x)",
        }
        return [Occurrence("client.blocked", data)]
    denied = _clip(e.object)
    command = denied if e.reason == "command" else ""
    what = f"{e.reason} '{denied}'"
    violation = {
        "username": user,
        "command": command,
        "reason": e.reason,
        "object": denied,
        "context": e.context,
        "message": f"ACL denied {what} to user '{user}'",
        "timestamp": e.timestamp_s * 1000,
    }
    audit = {
        "username": user,
        "clientInfo": client,
        "violationType": e.reason,
        "violatedCommand": command,
        "object": denied,
        "count": e.count,
        "message": f"User '{user}' from {client} was denied {what} ({e.count}x)",
        "timestamp": e.timestamp_s * 1000,
    }
    return [Occurrence("acl.violation", violation), Occurrence("audit.policy.violation", audit)]


def _acl_modified(e: Any) -> list[Candidate]:
    assert isinstance(e, AclModified)
    user = _clip(e.affected_user)
    change = e.change_type.replace("_", " ")
    data = {
        "modifiedBy": _clip(e.modified_by),
        "changeType": e.change_type,
        "affectedUser": user,
        "message": f"ACL {change}: '{user}'",
        "timestamp": e.at_ms,
    }
    return [Occurrence("acl.modified", data)]


def _config_changed(e: Any) -> list[Candidate]:
    assert isinstance(e, ConfigChanged)
    key = _clip(e.key)
    data = {
        "configKey": key,
        "oldValue": _clip(e.old_value),
        "newValue": _clip(e.new_value),
        "modifiedBy": _clip(e.modified_by),
        "message": f"Configuration '{key}' changed",
        "timestamp": e.at_ms,
    }
    return [Occurrence("config.changed", data)]


def _anomaly(e: Any) -> list[Candidate]:
    assert isinstance(e, AnomalyDetected)
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
        "message": _clip(e.message),
        "timestamp": e.at_ms,
    }
    if e.pattern is not None:  # one event per correlated group (anomaly/service.py)
        data["pattern"] = e.pattern
        data["relatedMetrics"] = list(e.related_metrics)
    return [Occurrence("anomaly.detected", data)]


def _forecast_limit(e: Any) -> list[Candidate]:
    assert isinstance(e, MetricForecastLimit)
    hours = e.time_to_limit_ms / 3_600_000
    when = "" if e.time_to_limit_ms == 0 else f" in {hours:.1f} h"
    reach = "has reached" if e.time_to_limit_ms == 0 else "is projected to reach"
    data = {
        "metricKind": e.metric_kind,
        "currentValue": e.current_value,
        "ceiling": e.ceiling,
        "timeToLimitMs": e.time_to_limit_ms,
        "growthRate": e.growth_rate,
        "alertThresholdMs": e.alert_threshold_ms,
        "message": f"{e.metric_kind} {reach} its ceiling {_number(e.ceiling)}{when}",
        "timestamp": e.at_ms,
    }
    return [Occurrence("metric_forecast.limit", data)]


def _failover(e: Any) -> list[Candidate]:
    assert isinstance(e, FailoverStarted | FailoverCompleted)
    started = isinstance(e, FailoverStarted)
    data = {
        "previousRole": e.previous_role,
        "newRole": e.new_role,
        "message": (
            f"Node stepped down from {e.previous_role} to {e.new_role}: failover started"
            if started
            else f"Node promoted from {e.previous_role} to {e.new_role}: failover completed"
        ),
        "timestamp": e.at_ms,
    }
    return [Occurrence("failover.started" if started else "failover.completed", data)]


def _data_loss(e: Any) -> list[Candidate]:
    assert isinstance(e, DataLossDetected)
    what = (
        "primary restarted empty"
        if e.kind == "primary_restarted_empty"
        else "replica wiped by a full sync from a new primary"
    )
    data = {
        "kind": e.kind,
        "previousKeys": e.previous_keys,
        "currentKeys": e.current_keys,
        "previousReplid": e.previous_replid,
        "newReplid": e.new_replid,
        "connectedSlaves": e.connected_slaves,
        "role": e.role,
        "message": f"Data loss: {what} ({e.previous_keys} keys -> {e.current_keys})",
        "timestamp": e.at_ms,
    }
    return [Occurrence("data.loss.detected", data)]


def _number(value: float) -> str:
    """1.5 as 1.5, a byte ceiling as 536870912 (not :g's 5.36871e+08)."""
    return f"{value:.0f}" if value.is_integer() else f"{value:g}"


def _cve(e: Any) -> list[Candidate]:
    assert isinstance(e, CveDetected)
    name = "Valkey" if e.engine == "valkey" else "Redis"
    fix = f"fixed in {e.fixed_in}" if e.fixed_in else "no fixed release yet"
    kev = ", known exploited (CISA KEV)" if e.kev else ""
    data = {
        "cveId": e.advisory_id,
        "ghsa": e.ghsa,
        "severity": e.severity,
        "cvss": e.cvss,
        "kev": e.kev,
        "engine": e.engine,
        "version": e.version,
        "fixedIn": e.fixed_in,
        "summary": _clip(e.summary),
        "message": f"{e.advisory_id} ({e.severity}{kev}) affects {name} {e.version}; {fix}",
        "timestamp": e.at_ms,
    }
    return [Occurrence("cve.detected", data)]


def _level(name: str) -> Callable[[Thresholds], float | None]:
    return lambda t: float(getattr(t, name))


_BUILDERS: dict[type, Callable[[Any], list[Candidate]]] = {
    InstanceDown: _instance_down,
    InstanceUp: _instance_up,
    MemoryReading: _memory,
    ClientsReading: _clients,
    ReplicationReading: _replication,
    SlowlogLength: _slowlog,
    LatencyReading: _latency,
    ClusterStateChanged: _cluster,
    ClusterBusCorruption: _cluster_bus,
    AclDenied: _acl_denied,
    AclModified: _acl_modified,
    ConfigChanged: _config_changed,
    AnomalyDetected: _anomaly,
    MetricForecastLimit: _forecast_limit,
    FailoverStarted: _failover,
    FailoverCompleted: _failover,
    DataLossDetected: _data_loss,
    CveDetected: _cve,
}
