"""The cluster poll kind: every other node of a cluster connection, at the INFO cadence.

Each pass keeps the topology fresh (cluster/service.py reads CLUSTER NODES when due), reads
INFO from every other node, reached directly, and puts it into the pipe as an Observation
tagged with the node's host:port. The seed's CLUSTER INFO is read every pass and goes into
the pipe as ClusterFacts (for the cluster state detector, detection/cluster_state.py,
anomaly detection and Prometheus); on Valkey 8.0+ so are the slots holding most keys
(CLUSTER SLOT-STATS of every primary, merged), at most every TOP_SLOTS_REFRESH_S.
"""

import asyncio
import logging
import time

from svc_monitor.cluster.service import ClusterService
from svc_monitor.config import Settings
from svc_monitor.connections.models import Connection
from svc_monitor.engine.capabilities import EngineIdentity
from svc_monitor.engine.client import EngineClient
from svc_monitor.engine.cluster import ClusterNode, SlotStats, parse_cluster_info, top_slot_stats
from svc_monitor.engine.errors import EngineError, EngineResponseError
from svc_monitor.events import now_ms
from svc_monitor.pipe.facts import ClusterFacts
from svc_monitor.pipe.observation import Observation
from svc_monitor.pipe.pipe import Pipe
from svc_monitor.polling.models import PollKind, PollTarget
from svc_monitor.runtime_settings.schemas import RuntimeSettingsValues

logger = logging.getLogger(__name__)

# Nodes polled at once per cluster: enough for big clusters to finish within a tick,
# few enough that one cluster cannot take every socket.
NODE_CONCURRENCY = 8
# Slots kept in ClusterFacts (the Prometheus slot series are limited to the top 100 by
# key count). Key counts move slowly and the read asks every primary, so not every pass.
TOP_SLOTS = 100
TOP_SLOTS_REFRESH_S = 15.0


class ClusterPoller:
    """Reads every node of a cluster connection into the pipe, through the cluster
    service's topology and node clients."""

    def __init__(self, clusters: ClusterService, pipe: Pipe) -> None:
        self._clusters = clusters
        self._pipe = pipe
        # Connections whose user may not run CLUSTER INFO: not asked again until
        # forgotten, or every pass would add a refusal to the ACL log we audit.
        self._cluster_info_refused: set[str] = set()
        self._slot_stats_refused: set[str] = set()
        # When the top slots were last read (monotonic seconds), and what they were.
        self._top_slots: dict[str, tuple[float, tuple[SlotStats, ...]]] = {}

    async def poll(
        self, connection: Connection, client: EngineClient, identity: EngineIdentity | None
    ) -> None:
        """One pass: refresh the topology when due, then INFO from every other node."""
        if identity is None or not identity.cluster_enabled:
            return
        await self._clusters.refresh_if_due(connection, client)
        info = await self._read_cluster_info(connection.id, client)
        limit = asyncio.Semaphore(NODE_CONCURRENCY)

        async def poll_node(node: ClusterNode) -> None:
            async with limit:
                info = await self._clusters.node_info(connection, node)
                if info is None:
                    return
                await self._pipe.observe(
                    Observation(
                        connection_id=connection.id,
                        received_at_ms=now_ms(),
                        info=info,
                        node=node.address,
                    )
                )

        _, top_slots = await asyncio.gather(
            asyncio.gather(*(poll_node(n) for n in self._clusters.peers(connection))),
            self._read_top_slots(connection, identity),
        )
        await self._pipe.put_facts(
            connection.id, ClusterFacts(at_ms=now_ms(), info=info or {}, top_slots=top_slots)
        )

    async def _read_cluster_info(
        self, connection_id: str, seed: EngineClient
    ) -> dict[str, int | str] | None:
        if connection_id in self._cluster_info_refused:
            return None
        try:
            reply = await seed.execute("CLUSTER", "INFO")
        except EngineResponseError as exc:
            # Refused (NOPERM): no cluster state events, and the nodes are still polled.
            logger.debug("CLUSTER INFO refused on %s: %s", connection_id, exc.message)
            self._cluster_info_refused.add(connection_id)
            return None
        return parse_cluster_info(reply)

    async def _read_top_slots(
        self, connection: Connection, identity: EngineIdentity
    ) -> tuple[SlotStats, ...]:
        """The TOP_SLOTS slots holding most keys; the last list until a refresh is due."""
        if not identity.capabilities.has_slot_stats or connection.id in self._slot_stats_refused:
            return ()
        last_read, previous = self._top_slots.get(connection.id, (None, ()))
        if last_read is not None and time.monotonic() - last_read < TOP_SLOTS_REFRESH_S:
            return previous
        command = ("CLUSTER", "SLOT-STATS", "ORDERBY", "key-count", "LIMIT", TOP_SLOTS)
        fanned = await self._clusters.fan_out(connection, *command, primaries_only=True)
        replies = [r for _, r in fanned]
        refused = next((r for r in replies if isinstance(r, EngineResponseError)), None)
        if refused is not None:
            # Not asked again until forgotten: each NOPERM would add to the ACL log we audit.
            logger.debug("CLUSTER SLOT-STATS refused on %s: %s", connection.id, refused.message)
            self._slot_stats_refused.add(connection.id)
            self._top_slots.pop(connection.id, None)
            return ()
        answers = [r for r in replies if not isinstance(r, EngineError)]
        # No primary answered (down, timed out): keep the last list until the next refresh.
        top = (
            tuple(top_slot_stats(answers, order_by="key-count", limit=TOP_SLOTS))
            if answers
            else previous
        )
        self._top_slots[connection.id] = (time.monotonic(), top)
        return top

    async def forget(self, connection_id: str) -> None:
        self._cluster_info_refused.discard(connection_id)
        self._slot_stats_refused.discard(connection_id)
        self._top_slots.pop(connection_id, None)
        await self._clusters.forget(connection_id)

    def kind(self) -> PollKind:
        async def poll(target: PollTarget) -> None:
            await self.poll(target.connection, target.client, target.identity)

        return PollKind(
            name="cluster",
            interval_ms=_interval,
            poll=poll,
            forget=self.forget,
            # Not detected yet (or down): the pass runs, and finds nothing to do.
            applies=lambda target: target.identity is None or target.identity.cluster_enabled,
        )


def _interval(values: RuntimeSettingsValues, _: Settings) -> int:
    # Nodes are polled as often as the seed, so cluster views stay as fresh as its own.
    return values.anomalyPollIntervalMs
