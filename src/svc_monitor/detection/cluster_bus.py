"""ClusterBusCorruption: a corruption counter of CLUSTER INFO grew between two reads.

What counts as corruption is ours to say
(docs/features/webhooks.md#readings-behind-the-threshold-events): a counter such as
`cluster_stats_messages_crc_mismatch`. Stock Valkey 9.1 and Redis 7 have no such counter:
their CLUSTER INFO counts messages (`cluster_stats_messages_<type>_{sent,received}`,
totals, bytes) and `total_cluster_links_buffer_limit_exceeded`, and a message that fails
the bus's checks is dropped without being counted. So any integer field whose name
mentions crc, checksum, corrupt or invalid is taken as such a counter, which covers
builds and forks that report one, and stays silent on the stock engines.

Per connection, the first read only sets the starting point. After that a counter
missing from a read counts as 0 (the engines list a per-type counter only once it is
non-zero, so its first appearance is an increase), and a counter that went down (a
restarted node, CONFIG RESETSTAT) sets a new starting point without firing.
"""

import re
from collections.abc import Mapping

from svc_monitor.event_types.cluster import ClusterBusCorruption
from svc_monitor.events import EventBus

_CORRUPTION = re.compile(r"crc|checksum|corrupt|invalid")


def corruption_counters(cluster_info: Mapping[str, int | str]) -> dict[str, int]:
    """The CLUSTER INFO fields that count corrupt cluster-bus messages, by name."""
    return {
        name: value
        for name, value in cluster_info.items()
        if isinstance(value, int) and _CORRUPTION.search(name.lower())
    }


class ClusterBusDetector:
    """Compares the corruption counters of each CLUSTER INFO with the read before."""

    def __init__(self, bus: EventBus) -> None:
        self._bus = bus
        self._seen: dict[str, dict[str, int]] = {}

    def observe(
        self, connection_id: str, cluster_info: Mapping[str, int | str], *, at_ms: int
    ) -> None:
        state = cluster_info.get("cluster_state")
        known = cluster_info.get("cluster_known_nodes")
        if not (isinstance(state, str) and isinstance(known, int)):
            return  # not a CLUSTER INFO reply of a cluster node
        current = corruption_counters(cluster_info)
        previous = self._seen.get(connection_id)
        self._seen[connection_id] = current
        if previous is None:
            return
        increases = {
            name: value - previous.get(name, 0)
            for name, value in current.items()
            if value > previous.get(name, 0)
        }
        if not increases:
            return
        self._bus.publish(
            ClusterBusCorruption(
                connection_id=connection_id,
                at_ms=at_ms,
                increases=increases,
                totals=current,
                state=state,
                known_nodes=known,
            )
        )

    def forget(self, connection_id: str) -> None:
        self._seen.pop(connection_id, None)
