"""Typed events and the in-process bus that carries them.

Detectors publish; consumers (webhooks, OTLP logs, stored events) subscribe. Each
subscriber has its own bounded queue: a slow consumer loses its own oldest events
(counted in `dropped`), never blocks a poller and never slows another consumer.
"""

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

logger = logging.getLogger(__name__)


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True, slots=True, kw_only=True)
class Event:
    at_ms: int = field(default_factory=now_ms)


@dataclass(frozen=True, slots=True, kw_only=True)
class InstanceEvent(Event):
    """Something about one monitored connection."""

    connection_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class InstanceDown(InstanceEvent):
    """A connection stopped answering (published once per transition)."""

    reason: str  # the EngineError kind: unreachable, timeout, auth, tls, protocol ...
    message: str


@dataclass(frozen=True, slots=True, kw_only=True)
class InstanceUp(InstanceEvent):
    """A connection answers again, or for the first time."""

    down_since_ms: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectionsChanged(Event):
    """A connection was added, edited or removed: pollers re-read the registry."""

    connection_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class RuntimeSettingsChanged(Event):
    """PUT /settings or a reset: poll intervals may have changed."""


class Subscription:
    """One consumer's bounded queue of events."""

    def __init__(
        self, name: str, maxsize: int, kinds: tuple[type[Event], ...] | None = None
    ) -> None:
        self.name = name
        # The event types this consumer wants; None for all. A consumer that waits for one
        # type must not have its queue filled (and its wanted event pushed out) by readings.
        self.kinds = kinds
        self.dropped = 0
        self._queue: asyncio.Queue[Event] = asyncio.Queue(maxsize)

    def offer(self, event: Event) -> None:
        if self._queue.full():
            self._queue.get_nowait()
            self.dropped += 1
            if self.dropped == 1 or self.dropped % 1000 == 0:
                logger.warning("event consumer %s is behind; %d dropped", self.name, self.dropped)
        self._queue.put_nowait(event)

    async def get(self) -> Event:
        return await self._queue.get()

    @property
    def backlog(self) -> int:
        return self._queue.qsize()

    def pending(self) -> list[Event]:
        """Everything queued now, without waiting."""
        events = []
        while not self._queue.empty():
            events.append(self._queue.get_nowait())
        return events

    async def __aiter__(self) -> AsyncIterator[Event]:
        while True:
            yield await self._queue.get()


class EventBus:
    """Fan-out of events to every subscription."""

    def __init__(self) -> None:
        self._subscriptions: list[Subscription] = []

    def subscribe(
        self,
        name: str,
        *,
        maxsize: int = 10_000,
        kinds: tuple[type[Event], ...] | None = None,
    ) -> Subscription:
        subscription = Subscription(name, maxsize, kinds)
        self._subscriptions.append(subscription)
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        self._subscriptions.remove(subscription)

    def publish(self, event: Event) -> None:
        for subscription in self._subscriptions:
            if subscription.kinds is None or isinstance(event, subscription.kinds):
                subscription.offer(event)


# --- Readings: facts a threshold consumer judges against its own thresholds ---
# Detectors publish these on every observation; they are not alerts. Webhooks apply each
# webhook's thresholds and hysteresis (notifications/alerts.py), so two webhooks with different
# thresholds see the same reading and decide for themselves.


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryReading(InstanceEvent):
    """INFO memory: used_memory against maxmemory (0 = no limit) and the eviction policy."""

    used_memory: int
    maxmemory: int
    maxmemory_policy: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientsReading(InstanceEvent):
    """INFO clients: connected_clients against maxclients, with the automatic spike level.

    `spike_level` is the baseline detector's threshold (detectors/baseline.py) once it has
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


# --- Occurrences: each one fires on its own, without hysteresis ---


@dataclass(frozen=True, slots=True, kw_only=True)
class ClusterStateChanged(InstanceEvent):
    """cluster_state or the count of failed slots changed between two CLUSTER INFO reads."""

    state: str
    previous_state: str
    slots_assigned: int
    slots_failed: int
    previous_slots_failed: int
    known_nodes: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ClusterBusCorruption(InstanceEvent):
    """A corruption counter of CLUSTER INFO (crc, checksum, corrupt or invalid in its
    name) grew between two reads: the cluster bus received messages it had to discard."""

    increases: dict[str, int]  # counter name -> increase since the previous read
    totals: dict[str, int]  # counter name -> value now
    state: str
    known_nodes: int


@dataclass(frozen=True, slots=True, kw_only=True)
class AclDenied(InstanceEvent):
    """A new ACL LOG entry, or a known one whose count grew (reason auth/command/key/channel)."""

    reason: str
    username: str
    client_info: str  # addr=host:port of the client, as ACL LOG reports it
    context: str
    object: str
    count: int
    timestamp_s: int  # when the server last updated the entry (epoch seconds)


@dataclass(frozen=True, slots=True, kw_only=True)
class AclModified(InstanceEvent):
    """A user was added or removed, or a user's rules changed (ACL LIST diff)."""

    change_type: str  # user_added | user_removed | permissions_changed
    affected_user: str
    modified_by: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfigChanged(InstanceEvent):
    """A configuration parameter changed (CONFIG GET diff after a CONFIG SET was seen)."""

    key: str
    old_value: str
    new_value: str
    modified_by: str


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
    sync from a new primary (anomaly/detectors.py, rules A and B)."""

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
