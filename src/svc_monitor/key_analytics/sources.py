"""Where a key analytics run reads keys: a fit replica, else the server; a cluster's shards.

The replica rule is connections/replica_reads.py's (ConnectionService.fit_replica); on a
cluster the replica must also accept READONLY (sampler.py).

A cluster's shards (shard_primaries) are the primaries holding slots in the seed's
CLUSTER NODES, less those flagged `fail`, parsed by engine/cluster.py as the cluster
poll does. Each is reached directly at the address it announces, with the seed's
credentials and TLS (ConnectionService.node_client, as cluster/service.py does), and
read by the replica rule above applied to its own INFO.
"""

import logging
from dataclasses import dataclass

from svc_monitor.connections.service import ConnectionService
from svc_monitor.engine.client import EngineClient
from svc_monitor.engine.cluster import ClusterNode, parse_cluster_nodes
from svc_monitor.engine.errors import EngineError, EngineResponseError
from svc_monitor.engine.info import ParsedInfo

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Shard:
    """One shard of a cluster run: where its keys are read, and how many it holds."""

    primary: str  # the primary's host:port; names the shard's cursor (store.cursor_key)
    source: EngineClient  # a replica of it (on_replica), or the primary
    on_replica: bool
    policy: str | None  # the primary's maxmemory-policy
    keys: int  # DBSIZE of the source


async def shard_primaries(connection_id: str, seed: EngineClient) -> list[ClusterNode]:
    """The cluster's primaries holding slots; none when the seed refuses CLUSTER NODES
    (the run then reads the seed alone)."""
    try:
        nodes = parse_cluster_nodes(await seed.execute("CLUSTER", "NODES"))
    except EngineResponseError as exc:
        logger.debug("CLUSTER NODES refused on %s (%s): seed only", connection_id, exc.message)
        return []
    return [n for n in nodes if "master" in n.flags and "fail" not in n.flags and n.slots]


async def open_shard(
    connections: ConnectionService,
    connection_id: str,
    seed: tuple[EngineClient, ParsedInfo],
    node: ClusterNode,
    opened: list[EngineClient],
) -> Shard | EngineError:
    """Where the shard of primary `node` is read, and its DBSIZE; its EngineError when the
    shard cannot be reached, logged. `seed` is the connection's client and its INFO;
    every client opened is added to `opened`, for the caller to close after the run."""
    try:
        if "myself" in node.flags:
            primary, info = seed
        else:
            # CLUSTER NODES names the nodes by the address they announce; the seed's
            # credentials and TLS reach each (as the cluster poll does).
            target = seed[0].target.peer(node.host, node.port)
            primary = connections.node_client(target)
            opened.append(primary)
            info = await primary.info()
        replica = await connections.fit_replica(primary, info, cluster=True)
        if replica is not None:
            opened.append(replica)
        source = replica or primary
        keys = int(await source.execute("DBSIZE"))
    except EngineError as exc:
        logger.warning(
            "key analytics on %s: shard %s left out (%s)", connection_id, node.address, exc.message
        )
        return exc
    return Shard(
        primary=node.address,
        source=source,
        on_replica=replica is not None,
        policy=info.get_str("memory", "maxmemory_policy"),
        keys=keys,
    )
