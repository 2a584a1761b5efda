"""The cluster as CLUSTER INFO shows it: cluster.failover (detection/cluster_state.py)
and cluster.bus.corruption (detection/cluster_bus.py)."""

from dataclasses import dataclass
from typing import Any

from svc_monitor.event_types.base import Data, EventType, event_type
from svc_monitor.events import InstanceEvent


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


def _failover(e: ClusterStateChanged) -> Data:
    """`cluster_state` or `cluster_slots_fail` changed since the last `CLUSTER INFO`"""
    return {
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


CLUSTER_FAILOVER = event_type(
    _failover,
    name="cluster.failover",
    order=80,
    tier="pro",
    # Each one carries the state now (both directions fire): a newer one says it all.
    state="cluster_state",
    example=ClusterStateChanged(
        connection_id="c1",
        state="fail",
        previous_state="ok",
        slots_assigned=16384,
        slots_failed=5461,
        previous_slots_failed=0,
        known_nodes=3,
    ),
)


def _bus_corruption(e: ClusterBusCorruption) -> Data:
    """a corruption counter of `CLUSTER INFO` grew since the last read

    Named by us; fires when a CLUSTER INFO counter whose name mentions crc, checksum, corrupt or
    invalid grows between two reads: `{corruptMessages, increases, totals, clusterState, knownNodes,
    message, timestamp}` (`increases` and `totals` map counter names to counts). Stock Valkey and
    Redis report no such counter."""
    corrupt = sum(e.increases.values())
    counters = ", ".join(f"{name} +{n}" for name, n in sorted(e.increases.items()))
    return {
        "corruptMessages": corrupt,
        "increases": dict(e.increases),
        "totals": dict(e.totals),
        "clusterState": e.state,
        "knownNodes": e.known_nodes,
        "message": f"Cluster bus discarded {corrupt} corrupt messages since the last read "
        f"({counters})",
        "timestamp": e.at_ms,
    }


# Named by us, in the style of the others: lowercase words joined by dots, no
# underscores (audit.policy.violation), under cluster.*
# (docs/features/webhooks.md#readings-behind-the-threshold-events).
CLUSTER_BUS_CORRUPTION = event_type(
    _bus_corruption,
    name="cluster.bus.corruption",
    order=90,
    tier="pro",
    example=ClusterBusCorruption(
        connection_id="c1",
        increases={"cluster_stats_messages_crc_mismatch": 3},
        totals={"cluster_stats_messages_crc_mismatch": 3},
        state="ok",
        known_nodes=3,
    ),
)


# In the order one bus event's notifications come out (table.candidates).
EVENT_TYPES: tuple[EventType[Any], ...] = (CLUSTER_FAILOVER, CLUSTER_BUS_CORRUPTION)
