"""Readings from every INFO observation of a connection: memory, clients, replication.

A reading is a fact, not an alert: the webhook dispatcher judges it against each
webhook's thresholds and hysteresis. A field the observation lacks (a pushed instance
sends only some) means no reading, never a reading of 0.

- MemoryReading: `used_memory`, `maxmemory` (0 = no limit) and `maxmemory_policy`.
- ClientsReading: `connected_clients` and `maxclients` (INFO clients has it on Redis 7+
  and Valkey; on Redis 6.2 it is absent and stays None: CONFIG GET is not read for it),
  with the automatic baseline of connected_clients (detection/baseline.py).
- SlowlogLength, from the slow log poll's facts (SLOWLOG LEN), when the length was read.
- ReplicationReading, on a replica (`role:slave`): `master_link_status`, and as lag
  `master_last_io_seconds_ago` while the link is up, `master_link_down_since_seconds`
  while it is down (or the time since we first saw it down, when the server does not
  say). On a primary with replicas: the largest `lag=` of its `slaveN` lines, with
  status "primary". Anything else (a primary without replicas): no reading.

Cluster nodes (observation.node set) are left out: these readings are per connection.
"""

import time
from collections.abc import Callable

from svc_monitor.detection.baseline import SpikeBaseline
from svc_monitor.engine.info import FieldValue, ParsedInfo, parse_subfields
from svc_monitor.event_types.readings import (
    ClientsReading,
    MemoryReading,
    ReplicationReading,
    SlowlogLength,
)
from svc_monitor.events import EventBus
from svc_monitor.pipe.facts import Facts, SlowlogFacts
from svc_monitor.pipe.observation import Observation

# The smallest rise in connected_clients that counts as a spike however steady the
# count: on an instance with 3 steady clients, 50 % more is only 1-2 connections.
CLIENTS_MINIMUM_RISE = 10.0

_REPLICA_ROLES = frozenset({"slave", "replica"})
_PRIMARY_ROLES = frozenset({"master", "primary"})


class ReadingsDetector:
    """Publishes the memory, clients and replication readings of each observation."""

    def __init__(self, bus: EventBus, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._bus = bus
        self._clock = clock
        self._clients: dict[str, SpikeBaseline] = {}
        self._link_down_since: dict[str, float] = {}

    def observe(self, observation: Observation) -> None:
        if observation.node is not None:
            return
        for reading in (
            _memory(observation),
            self._clients_reading(observation),
            self._replication(observation),
        ):
            if reading is not None:
                self._bus.publish(reading)

    def observe_facts(self, connection_id: str, facts: Facts) -> None:
        if isinstance(facts, SlowlogFacts) and facts.length is not None:
            self._bus.publish(
                SlowlogLength(connection_id=connection_id, at_ms=facts.at_ms, length=facts.length)
            )

    def forget(self, connection_id: str) -> None:
        """The connection was removed or edited (maybe to another server): start over."""
        self._clients.pop(connection_id, None)
        self._link_down_since.pop(connection_id, None)

    def _clients_reading(self, observation: Observation) -> ClientsReading | None:
        info = observation.info
        connected = info.get_int("clients", "connected_clients")
        if connected is None:
            return None
        connection_id = observation.connection_id
        history = self._clients.get(connection_id)
        if history is None:
            history = self._clients[connection_id] = SpikeBaseline(
                minimum_rise=CLIENTS_MINIMUM_RISE
            )
        baseline = history.judge(connected)
        return ClientsReading(
            connection_id=connection_id,
            at_ms=observation.received_at_ms,
            connected_clients=connected,
            maxclients=info.get_int("clients", "maxclients"),
            baseline=baseline.mean if baseline else None,
            spike_level=baseline.spike_level if baseline else None,
        )

    def _replication(self, observation: Observation) -> ReplicationReading | None:
        info = observation.info
        role = info.get_str("replication", "role")
        connection_id = observation.connection_id
        if role in _REPLICA_ROLES:
            status = info.get_str("replication", "master_link_status")
            lag = self._replica_lag(connection_id, info, status)
        else:
            self._link_down_since.pop(connection_id, None)
            status = "primary"
            lag = _largest_replica_lag(info) if role in _PRIMARY_ROLES else None
        if status is None or lag is None:
            return None
        return ReplicationReading(
            connection_id=connection_id,
            at_ms=observation.received_at_ms,
            lag_seconds=lag,
            master_link_status=status,
        )

    def _replica_lag(
        self, connection_id: str, info: ParsedInfo, status: str | None
    ) -> float | None:
        if status == "up":
            self._link_down_since.pop(connection_id, None)
            last_io = info.get_int("replication", "master_last_io_seconds_ago")
            return float(last_io) if last_io is not None and last_io >= 0 else None
        if status is None:
            return None
        first_seen = self._link_down_since.setdefault(connection_id, self._clock())
        down_for = info.get_int("replication", "master_link_down_since_seconds")
        # -1 (or absent) when the replica has never been linked since it started.
        if down_for is not None and down_for >= 0:
            return float(down_for)
        return self._clock() - first_seen


def _memory(observation: Observation) -> MemoryReading | None:
    info = observation.info
    used = info.get_int("memory", "used_memory")
    maxmemory = info.get_int("memory", "maxmemory")
    if used is None or maxmemory is None:
        return None
    return MemoryReading(
        connection_id=observation.connection_id,
        at_ms=observation.received_at_ms,
        used_memory=used,
        maxmemory=maxmemory,
        maxmemory_policy=info.get_str("memory", "maxmemory_policy"),
    )


def _largest_replica_lag(info: ParsedInfo) -> float | None:
    """The largest `lag=` of the `slaveN:ip=...,lag=N` lines; None without replicas."""
    if info.get_int("replication", "connected_slaves") == 0:
        # The common primary: no slaveN lines to look for, and no need to parse the
        # whole section for them every second.
        return None
    section = info.sections.get("replication")
    if section is None:
        return None
    lags = [
        lag
        for name, value in section.items()
        if name.startswith("slave") and name[5:].isdigit() and (lag := _lag_of(value)) is not None
    ]
    return float(max(lags)) if lags else None


def _lag_of(value: FieldValue) -> int | None:
    fields = value if isinstance(value, dict) else parse_subfields(str(value))
    lag = fields.get("lag")
    return lag if isinstance(lag, int) and lag >= 0 else None
