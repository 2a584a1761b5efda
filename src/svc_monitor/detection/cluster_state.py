"""ClusterStateChanged: `cluster_state` or `cluster_slots_fail` differs between two
CLUSTER INFO reads of the same cluster connection.

The first read of a connection only sets the starting point (a cluster found failing
is not a change we saw happen); after that every change fires once, in each direction,
so a recovery (fail -> ok) is published as well as the failure. A reply without those
fields (a server that is not a cluster, or a refused command) changes nothing.

The same reads feed the cluster bus corruption detector (cluster_bus.py), so one
CLUSTER INFO per pass serves both.
"""

from collections.abc import Mapping
from dataclasses import dataclass

from svc_monitor.detection.cluster_bus import ClusterBusDetector
from svc_monitor.event_types.cluster import ClusterStateChanged
from svc_monitor.events import EventBus
from svc_monitor.pipe.facts import ClusterFacts, Facts


@dataclass(frozen=True, slots=True)
class _Seen:
    state: str
    slots_failed: int


class ClusterStateDetector:
    """Compares each CLUSTER INFO of a connection with the one before."""

    def __init__(self, bus: EventBus) -> None:
        self._bus = bus
        self._seen: dict[str, _Seen] = {}
        self._bus_corruption = ClusterBusDetector(bus)

    def observe_facts(self, connection_id: str, facts: Facts) -> None:
        """As a facts consumer of the pipe: the seed's CLUSTER INFO of each cluster pass
        (empty when the user may not run it: nothing to compare)."""
        if isinstance(facts, ClusterFacts) and facts.info:
            self.observe(connection_id, facts.info, at_ms=facts.at_ms)

    def observe(
        self, connection_id: str, cluster_info: Mapping[str, int | str], *, at_ms: int
    ) -> None:
        self._bus_corruption.observe(connection_id, cluster_info, at_ms=at_ms)
        state = cluster_info.get("cluster_state")
        failed = cluster_info.get("cluster_slots_fail")
        assigned = cluster_info.get("cluster_slots_assigned")
        known = cluster_info.get("cluster_known_nodes")
        if not (
            isinstance(state, str)
            and isinstance(failed, int)
            and isinstance(assigned, int)
            and isinstance(known, int)
        ):
            return
        current = _Seen(state, failed)
        previous = self._seen.get(connection_id)
        self._seen[connection_id] = current
        if previous is None or previous == current:
            return
        self._bus.publish(
            ClusterStateChanged(
                connection_id=connection_id,
                at_ms=at_ms,
                state=state,
                previous_state=previous.state,
                slots_assigned=assigned,
                slots_failed=failed,
                previous_slots_failed=previous.slots_failed,
                known_nodes=known,
            )
        )

    def forget(self, connection_id: str) -> None:
        self._seen.pop(connection_id, None)
        self._bus_corruption.forget(connection_id)
