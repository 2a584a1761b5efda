"""The threshold events and the readings they judge: memory, clients, replication, slow
log and latency.

Detectors publish a reading on every observation (detection/readings.py,
detection/command_latency.py); a reading is a fact, not an alert. Each consumer has it
judged against its own thresholds with hysteresis (detection/alerts/service.py,
`AlertStates.fires`), so two webhooks with different thresholds see the same reading and
each gets its own verdict.
"""

from dataclasses import dataclass
from typing import Any

from svc_monitor.event_types.base import (
    Data,
    EventType,
    Measurement,
    event_type,
    percent,
    share_of_limit,
)
from svc_monitor.events import InstanceEvent


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryReading(InstanceEvent):
    """INFO memory: used_memory against maxmemory (0 = no limit) and the eviction policy."""

    used_memory: int
    maxmemory: int
    maxmemory_policy: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientsReading(InstanceEvent):
    """INFO clients: connected_clients against maxclients, with the automatic spike level.

    `spike_level` is the baseline detector's threshold (detection/baseline.py) once it has
    enough samples, else None; a webhook with connectionSpikeCount 0 uses it.
    """

    connected_clients: int
    maxclients: int | None
    baseline: float | None = None
    spike_level: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplicationReading(InstanceEvent):
    """How far behind replication is, in seconds, seen from a replica or from its primary."""

    lag_seconds: float
    master_link_status: str  # "up" / "down" on a replica; "primary" when seen from the primary


@dataclass(frozen=True, slots=True, kw_only=True)
class SlowlogLength(InstanceEvent):
    """SLOWLOG LEN of the instance."""

    length: int


@dataclass(frozen=True, slots=True, kw_only=True)
class LatencyReading(InstanceEvent):
    """Mean command latency over the last commandstats interval, in milliseconds."""

    latency_ms: float
    baseline_ms: float | None = None
    spike_level_ms: float | None = None


# Published on every poll of every connection, whether or not anyone is told of them.
READINGS: tuple[type[InstanceEvent], ...] = (
    MemoryReading,
    ClientsReading,
    ReplicationReading,
    SlowlogLength,
    LatencyReading,
)

# The readings the table's tests build each type from.
_FULL = MemoryReading(
    connection_id="c1", used_memory=980, maxmemory=1000, maxmemory_policy="noeviction"
)
_CLIENTS = ClientsReading(
    connection_id="c1", connected_clients=95, maxclients=100, baseline=20.0, spike_level=40.0
)


def _memory_critical(e: MemoryReading) -> Measurement | None:
    """`used_memory / maxmemory` above `memoryCriticalPercent` (never when maxmemory is 0)"""
    if e.maxmemory <= 0:
        return None  # no limit: a percentage of nothing means nothing
    pct = percent(e.used_memory, e.maxmemory)
    return share_of_limit(
        "memory_used_percent",
        ("usedMemory", e.used_memory),
        ("maxmemory", e.maxmemory),
        lambda threshold: f"Memory usage {pct}% of maxmemory is above {threshold:g}%",
    )


MEMORY_CRITICAL = event_type(
    _memory_critical,
    name="memory.critical",
    order=30,
    tier="community",
    threshold="memoryCriticalPercent",
    example=_FULL,
)


def _compliance(e: MemoryReading) -> Measurement | None:
    """`used_memory / maxmemory` above
    `complianceMemoryPercent` with `maxmemory-policy noeviction`"""
    policy = e.maxmemory_policy
    if e.maxmemory <= 0 or policy != "noeviction":
        return None
    pct = percent(e.used_memory, e.maxmemory)

    def data(threshold: float) -> Data:
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

    return Measurement(pct, data)


# compliance.alert: memory above its level under `noeviction`, since a full instance that
# cannot evict refuses writes (docs/reference/webhook-events.md).
COMPLIANCE_ALERT = event_type(
    _compliance,
    name="compliance.alert",
    order=180,
    tier="enterprise",
    threshold="complianceMemoryPercent",
    example=_FULL,
)


def _connection_critical(e: ClientsReading) -> Measurement | None:
    """`connected_clients / maxclients` above `connectionCriticalPercent`"""
    connected, limit = e.connected_clients, e.maxclients
    if not limit:
        return None
    pct = percent(connected, limit)
    return share_of_limit(
        "connected_clients_percent",
        ("connectedClients", connected),
        ("maxClients", limit),
        lambda threshold: f"{connected} clients are {pct}% of maxclients, above {threshold:g}%",
    )


CONNECTION_CRITICAL = event_type(
    _connection_critical,
    name="connection.critical",
    order=40,
    tier="community",
    threshold="connectionCriticalPercent",
    example=_CLIENTS,
)


def _connection_spike(e: ClientsReading) -> Measurement:
    """`connected_clients` above `connectionSpikeCount`, or above the automatic baseline when it is
    0

    `{connectedClients, threshold, baseline, detection, message, timestamp}` (`detection` as for
    `latency.spike`)."""
    connected, automatic = e.connected_clients, e.spike_level

    def data(threshold: float) -> Data:
        return {
            "connectedClients": connected,
            "threshold": round(threshold, 2),
            "baseline": round(e.baseline, 2) if e.baseline is not None else None,
            "detection": "automatic" if threshold == automatic else "threshold",
            "message": f"{connected} connected clients, above the spike level {threshold:.0f}",
            "timestamp": e.at_ms,
        }

    return Measurement(connected, data, automatic)


CONNECTION_SPIKE = event_type(
    _connection_spike,
    name="connection.spike",
    order=120,
    tier="pro",
    threshold="connectionSpikeCount",
    example=_CLIENTS,
)


def _replication_lag(e: ReplicationReading) -> Measurement:
    """replica lag above `replicationLagSeconds`"""

    def data(threshold: float) -> Data:
        return {
            "lagSeconds": e.lag_seconds,
            "threshold": threshold,
            "masterLinkStatus": e.master_link_status,
            "message": f"Replication lag {e.lag_seconds:g} s is above {threshold:g} s",
            "timestamp": e.at_ms,
        }

    return Measurement(e.lag_seconds, data)


REPLICATION_LAG = event_type(
    _replication_lag,
    name="replication.lag",
    order=70,
    tier="pro",
    threshold="replicationLagSeconds",
    example=ReplicationReading(connection_id="c1", lag_seconds=42.0, master_link_status="up"),
)


def _slowlog(e: SlowlogLength) -> Measurement:
    """`SLOWLOG LEN` above `slowlogCount`"""

    def data(threshold: float) -> Data:
        return {
            "slowlogCount": e.length,
            "threshold": int(threshold),
            "message": f"The slow log holds {e.length} entries, above {threshold:g}",
            "timestamp": e.at_ms,
        }

    return Measurement(e.length, data)


SLOWLOG_THRESHOLD = event_type(
    _slowlog,
    name="slowlog.threshold",
    order=60,
    tier="pro",
    threshold="slowlogCount",
    example=SlowlogLength(connection_id="c1", length=500),
)


def _latency_spike(e: LatencyReading) -> Measurement:
    """mean command latency over a commandstats interval above `latencySpikeMs`, or the automatic
    baseline when 0

    `{latencyMs, threshold, baselineMs, detection, message, timestamp}` (`detection`:
    `threshold`, or `automatic` when the webhook's level is 0 and the rolling baseline decides)."""
    automatic = e.spike_level_ms

    def data(threshold: float) -> Data:
        return {
            "latencyMs": round(e.latency_ms, 3),
            "threshold": round(threshold, 3),
            "baselineMs": round(e.baseline_ms, 3) if e.baseline_ms is not None else None,
            "detection": "automatic" if threshold == automatic else "threshold",
            "message": f"Mean command latency {e.latency_ms:.2f} ms is above {threshold:.2f} ms",
            "timestamp": e.at_ms,
        }

    return Measurement(e.latency_ms, data, automatic)


LATENCY_SPIKE = event_type(
    _latency_spike,
    name="latency.spike",
    order=110,
    tier="pro",
    threshold="latencySpikeMs",
    example=LatencyReading(
        connection_id="c1", latency_ms=12.5, baseline_ms=0.4, spike_level_ms=1.4
    ),
)


# In the order one bus event's notifications come out (table.candidates).
EVENT_TYPES: tuple[EventType[Any], ...] = (
    MEMORY_CRITICAL,
    COMPLIANCE_ALERT,
    CONNECTION_CRITICAL,
    CONNECTION_SPIKE,
    REPLICATION_LAG,
    SLOWLOG_THRESHOLD,
    LATENCY_SPIKE,
)
