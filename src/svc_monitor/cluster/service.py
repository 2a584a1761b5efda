"""Whole clusters from one seed: discover every node, reach each directly, merge views.

A connection to any node of a cluster stands for the whole cluster. Its topology is
read with CLUSTER NODES from the seed (every TOPOLOGY_REFRESH_S, and whenever a node
fails), so failovers and added or removed nodes show within a poll or two. Each node is
reached directly with the seed's credentials and TLS settings. The cluster poll
(polling/cluster_poll.py) keeps the topology fresh through this service and puts what the
nodes say into the pipe; the routes read the topology, the nodes' latest observations in
live state, and live fan-outs to every node.
"""

import asyncio
import logging
import time
from dataclasses import dataclass, replace
from typing import Any

from svc_monitor.cluster.schemas import (
    ClusterClient,
    ClusterInfoRead,
    ClusterLogEntry,
    ClusterNodeRead,
    ClusterNodeStats,
    Role,
    SlotMoveRead,
    SlotStatsRead,
    SlotStatsRecord,
)
from svc_monitor.connections.models import Connection
from svc_monitor.connections.service import ConnectionService
from svc_monitor.engine.client import CLIENT_NAME, EngineClient
from svc_monitor.engine.clients import parse_client_list
from svc_monitor.engine.cluster import (
    ClusterNode,
    parse_cluster_info,
    parse_cluster_nodes,
    top_slot_stats,
)
from svc_monitor.engine.errors import EngineError, EngineResponseError
from svc_monitor.engine.info import ParsedInfo
from svc_monitor.engine.slowlog import parse_log_reply
from svc_monitor.errors import Conflict
from svc_monitor.kit.records import from_attributes
from svc_monitor.live.service import (
    SLOT_STATS_UNSUPPORTED,
    ClusterModeDisabled,
    EngineUnavailable,
    FeatureUnavailable,
    detected_identity,
    engine_call,
)
from svc_monitor.pipe.live_view import LiveView
from svc_monitor.pipe.observation import Observation

logger = logging.getLogger(__name__)

TOPOLOGY_REFRESH_S = 5.0


@dataclass(slots=True)
class _Cluster:
    nodes: list[ClusterNode]
    refreshed_at: float
    errors: dict[str, str]


class ClusterService:
    """Topology, per-node clients and cluster-wide reads for cluster connections."""

    def __init__(
        self,
        connections: ConnectionService,
        live_state: LiveView,
    ) -> None:
        self._connections = connections
        self._live_state = live_state
        self._clusters: dict[str, _Cluster] = {}
        self._clients: dict[tuple[str, str], EngineClient] = {}

    # --- topology, for the cluster poll (polling/cluster_poll.py) and the routes ---

    async def refresh_if_due(self, connection: Connection, seed: EngineClient) -> None:
        """Read CLUSTER NODES from the seed when the topology is unknown, older than
        TOPOLOGY_REFRESH_S, or a node failed since."""
        cluster = self._clusters.get(connection.id)
        due = (
            cluster is None
            or cluster.errors
            or (time.monotonic() - cluster.refreshed_at >= TOPOLOGY_REFRESH_S)
        )
        if due:
            await self._refresh(connection, seed, cluster)

    def peers(self, connection: Connection) -> list[ClusterNode]:
        """The nodes other than the seed not flagged as failing: those the poll reads."""
        cluster = self._clusters.get(connection.id)
        seed = _address(connection.host, connection.port)
        nodes = cluster.nodes if cluster is not None else []
        return [n for n in nodes if n.address != seed and "fail" not in n.flags]

    async def primary_clients(
        self, connection: Connection, seed: EngineClient
    ) -> list[tuple[str, EngineClient]]:
        """(host:port, client) of every primary not flagged failing, each reached
        directly (the seed through its own client): for the polls that read every shard.
        The seed alone when it refuses CLUSTER NODES."""
        seed_address = _address(connection.host, connection.port)
        try:
            await self.refresh_if_due(connection, seed)
        except EngineError as exc:
            logger.debug("%s: CLUSTER NODES failed: %s", connection.id, exc.message)
            return [(seed_address, seed)]
        cluster = self._clusters.get(connection.id)
        nodes = [] if cluster is None else cluster.nodes
        found = [
            (n.address, seed if n.address == seed_address else self._client(connection, n.address))
            for n in nodes
            if "fail" not in n.flags and "slave" not in n.flags
        ]
        return found or [(seed_address, seed)]

    async def node_info(self, connection: Connection, node: ClusterNode) -> ParsedInfo | None:
        """INFO from one node, reached directly; None when it fails, which the node's row
        shows (node_stats) and which makes the next pass refresh the topology."""
        cluster = self._clusters.get(connection.id)
        try:
            info = await self._client(connection, node.address).info()
        except EngineError as exc:
            if cluster is not None:
                cluster.errors[node.address] = exc.message
            return None
        if cluster is not None:
            cluster.errors.pop(node.address, None)
        return info

    async def _refresh(
        self, connection: Connection, seed: EngineClient, previous: _Cluster | None
    ) -> None:
        nodes = parse_cluster_nodes(await seed.execute("CLUSTER", "NODES"))
        # CLUSTER NODES names the seed by the address it announces, which may not be the
        # one we connect to; "myself" marks it either way.
        seed_address = _address(connection.host, connection.port)
        nodes = [replace(n, address=seed_address) if "myself" in n.flags else n for n in nodes]
        cluster = _Cluster(nodes, time.monotonic(), previous.errors if previous else {})
        self._clusters[connection.id] = cluster
        known = {n.address for n in nodes}
        for key in [k for k in self._clients if k[0] == connection.id and k[1] not in known]:
            await self._clients.pop(key).close()

    def _client(self, connection: Connection, address: str) -> EngineClient:
        key = (connection.id, address)
        client = self._clients.get(key)
        if client is None:
            host, _, port = address.rpartition(":")
            seed = self._connections.client(connection)
            target = seed.target.peer(host.strip("[]"), int(port))
            client = self._clients[key] = self._connections.node_client(target)
        return client

    async def forget(self, connection_id: str) -> None:
        self._clusters.pop(connection_id, None)
        for key in [k for k in self._clients if k[0] == connection_id]:
            await self._clients.pop(key).close()

    async def close(self) -> None:
        clients = list(self._clients.values())
        self._clients.clear()
        await asyncio.gather(*(c.close() for c in clients), return_exceptions=True)

    # --- reads ---

    def node_stats(self, connection: Connection) -> list[ClusterNodeStats]:
        cluster = self._require(connection)
        seed = _address(connection.host, connection.port)
        stats = []
        for node in cluster.nodes:
            observation = self._live_state.latest(
                connection.id, None if node.address == seed else node.address
            )
            error = cluster.errors.get(node.address)
            row = ClusterNodeStats(
                id=node.id,
                address=node.address,
                role=_role(node, observation),
                primaryId=node.master,
                slots=sum(last - first + 1 for first, last in node.slots),
                status="down" if error or "fail" in node.flags else "unknown",
                error=error,
            )
            if observation is not None and row.status != "down":
                info = observation.info
                row = row.model_copy(
                    update={
                        "status": "up",
                        "polledAt": observation.received_at_ms,
                        "version": info.get_str("server", "valkey_version")
                        or info.get_str("server", "redis_version"),
                        "usedMemory": info.get_int("memory", "used_memory"),
                        "opsPerSec": info.get_int("stats", "instantaneous_ops_per_sec"),
                        "connectedClients": info.get_int("clients", "connected_clients"),
                        "replicationOffset": info.get_int("replication", "master_repl_offset"),
                        "masterLinkStatus": info.get_str("replication", "master_link_status"),
                    }
                )
            stats.append(row)
        return stats

    async def fan_out(
        self, connection: Connection, *command: Any, primaries_only: bool = False
    ) -> list[tuple[ClusterNode, Any]]:
        """Run one command on every node (or every primary) at once: (node, reply or
        EngineError) per node, so one dead node never hides the others."""
        cluster = self._require(connection)
        seed = _address(connection.host, connection.port)
        nodes = [
            n
            for n in cluster.nodes
            if "fail" not in n.flags and not (primaries_only and "slave" in n.flags)
        ]

        async def run(node: ClusterNode) -> Any:
            client = (
                self._connections.client(connection)
                if node.address == seed
                else self._client(connection, node.address)
            )
            try:
                return await client.execute(*command)
            except EngineError as exc:
                logger.debug("%s on %s failed: %s", command[0], node.address, exc.message)
                return exc

        replies = await asyncio.gather(*(run(n) for n in nodes))
        return list(zip(nodes, replies, strict=True))

    async def merged_log(
        self, connection: Connection, *, count: int, log_type: str | None = None
    ) -> list[ClusterLogEntry]:
        """SLOWLOG GET (or COMMANDLOG GET <type>) from every node at once, merged newest
        first; each entry names its node. CommandUnavailable (501) when detection found the
        seed's SLOWLOG missing: the nodes of one cluster share their configuration."""
        if log_type is None:
            self._require(connection)  # not a cluster: 409 first, as for every cluster route
            await self._connections.require_live_feature(connection, "slow_log")
        command = (
            ("SLOWLOG", "GET", count)
            if log_type is None
            else ("COMMANDLOG", "GET", count, log_type)
        )
        merged = [
            ClusterLogEntry(
                node=node.address,
                nodeId=node.id,
                id=e.id,
                timestamp=e.started_at_ms,
                duration=e.duration,
                command=list(e.args),
                clientAddress=e.client_address,
                clientName=e.client_name,
            )
            for node, reply in await self.fan_out(connection, *command)
            if not isinstance(reply, EngineError)
            for e in parse_log_reply(reply)
        ]
        merged.sort(key=lambda e: (e.timestamp, e.id), reverse=True)
        return merged[:count]

    async def merged_clients(self, connection: Connection) -> list[ClusterClient]:
        """CLIENT LIST of every node, the monitor's own connections left out."""
        return [
            from_attributes(
                ClusterClient,
                c,
                node=node.address,
                nodeId=node.id,
                ageSeconds=c.age,
                idleSeconds=c.idle,
            )
            for node, reply in await self.fan_out(connection, "CLIENT", "LIST")
            if not isinstance(reply, EngineError)
            for c in parse_client_list(reply)
            if c.name != CLIENT_NAME
        ]

    # --- the seed's live cluster reads ---

    async def cluster_info(self, connection: Connection) -> ClusterInfoRead:
        await self._require_cluster(connection)
        reply = await engine_call(self._connections.client(connection), "CLUSTER", "INFO")
        return ClusterInfoRead(parse_cluster_info(reply))

    async def cluster_nodes(self, connection: Connection) -> list[ClusterNodeRead]:
        await self._require_cluster(connection)
        reply = await engine_call(self._connections.client(connection), "CLUSTER", "NODES")
        return [
            from_attributes(
                ClusterNodeRead,
                n,
                migratingSlots=[SlotMoveRead(slot=m.slot, nodeId=m.node) for m in n.migrating],
                importingSlots=[SlotMoveRead(slot=m.slot, nodeId=m.node) for m in n.importing],
            )
            for n in parse_cluster_nodes(reply)
        ]

    async def slot_stats(
        self, connection: Connection, *, order_by: str, limit: int
    ) -> SlotStatsRead:
        identity = await detected_identity(self._connections, connection)
        if not identity.capabilities.has_slot_stats:
            raise FeatureUnavailable(SLOT_STATS_UNSUPPORTED)
        if not identity.cluster_enabled:
            # The command exists but a standalone server refuses it: unsupported here, as
            # on an engine without it (501), not a conflict the caller could resolve.
            raise FeatureUnavailable(
                f"{SLOT_STATS_UNSUPPORTED}: the server is not in cluster mode (cluster-enabled no)"
            )
        command = ("CLUSTER", "SLOT-STATS", "ORDERBY", order_by, "LIMIT", limit)
        try:
            # Each primary reports only its own slots: ask them all (top_slot_stats merges).
            replies = [r for _, r in await self.fan_out(connection, *command, primaries_only=True)]
        except ClusterNotDiscovered:
            replies = [await _as_result(self._connections.client(connection), command)]
        answers = [r for r in replies if not isinstance(r, EngineError)]
        if not answers:
            error = replies[0] if replies else EngineError("no node answered")
            assert isinstance(error, EngineError)
            self._raise_slot_stats(error, order_by)
        stats = top_slot_stats(answers, order_by=order_by, limit=limit)
        return SlotStatsRead(
            {
                str(s.slot): SlotStatsRecord(
                    key_count=s.key_count,
                    expires_count=s.expires_count,
                    total_reads=s.total_reads,
                    total_writes=s.total_writes,
                    cpu_usec=s.cpu_usec,
                )
                for s in stats
            }
        )

    @staticmethod
    def _raise_slot_stats(exc: EngineError, order_by: str) -> None:
        if isinstance(exc, EngineResponseError):
            if order_by == "cpu-usec" and "orderby" in exc.message.lower():
                # Valkey 8.0+ tracks cpu-usec only with cluster-slot-stats-enabled yes.
                raise Conflict(
                    "orderBy=cpu-usec needs the server setting cluster-slot-stats-enabled yes "
                    f"(the server said: {exc.message})",
                    field="orderBy",
                )
            raise FeatureUnavailable(f"{SLOT_STATS_UNSUPPORTED}: {exc.message}")
        raise EngineUnavailable(exc.message)

    async def _require_cluster(self, connection: Connection) -> None:
        if not (await detected_identity(self._connections, connection)).cluster_enabled:
            raise ClusterModeDisabled()

    def _require(self, connection: Connection) -> _Cluster:
        cluster = self._clusters.get(connection.id)
        if cluster is None:
            raise ClusterNotDiscovered(
                f"Connection '{connection.id}' is not a cluster, or its nodes are not "
                "discovered yet (cluster mode off, or the first poll has not run)"
            )
        return cluster


class ClusterNotDiscovered(Conflict):
    pass


def _role(node: ClusterNode, observation: Observation | None) -> Role:
    """The role the node itself reports in INFO (fresh each poll, so a failover shows at
    once); CLUSTER NODES flags until its first INFO arrives."""
    reported = observation.info.get_str("replication", "role") if observation else None
    if reported == "master" or (reported is None and "master" in node.flags):
        return "primary"
    if reported == "slave" or (reported is None and "slave" in node.flags):
        return "replica"
    return "unknown"


def _address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


async def _as_result(client: EngineClient, command: tuple[Any, ...]) -> Any:
    """The reply, or the EngineError instead of raising it (like fan_out)."""
    try:
        return await client.execute(*command)
    except EngineError as exc:
        return exc
