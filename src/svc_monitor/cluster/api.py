"""Cluster routes (under /api/metrics/cluster): every node, from one seed connection, and
the seed's own cluster reads (CLUSTER INFO, NODES, SLOT-STATS) made live."""

from typing import Annotated, Literal

from fastapi import APIRouter, Query

from svc_monitor.api.error_responses import error_responses
from svc_monitor.cluster.dependencies import ClustersDep
from svc_monitor.cluster.schemas import (
    ClusterClient,
    ClusterInfoRead,
    ClusterLogEntry,
    ClusterNodeRead,
    ClusterNodeStats,
    SlotStatsRead,
)
from svc_monitor.connections.dependencies import ConnectionServiceDep, LiveConnection
from svc_monitor.errors import NotSupported
from svc_monitor.slowlog.service import COMMANDLOG_UNSUPPORTED

router = APIRouter(prefix="/metrics/cluster", tags=["cluster"])
# The seed's own reads keep the tag of the other live reads in the API docs.
live_router = APIRouter(prefix="/metrics/cluster", tags=["live metrics"])

_CLUSTER = error_responses(404, 409, 501, 503)


@router.get(
    "/node-stats", response_model=list[ClusterNodeStats], responses=error_responses(404, 409)
)
async def list_node_stats(
    connection: LiveConnection, clusters: ClustersDep
) -> list[ClusterNodeStats]:
    """Every node of the selected connection's cluster, with its role as the node itself
    last reported it (so a failover shows within a poll) and its headline stats.

    409 when the connection is not a cluster or its nodes are not discovered yet.
    """
    return clusters.node_stats(connection)


Count = Annotated[int, Query(ge=1, le=10_000, description="entries per node and in all")]
LogType = Annotated[
    Literal["slow", "large-request", "large-reply"], Query(description="which command log")
]


@router.get(
    "/slowlog",
    response_model=list[ClusterLogEntry],
    responses=error_responses(404, 409, 422, 501),
)
async def list_cluster_slowlog(
    connection: LiveConnection, clusters: ClustersDep, count: Count = 100
) -> list[ClusterLogEntry]:
    """The slow logs of every node, read live and merged newest first; each entry names
    the node (host:port) that logged it (501 where SLOWLOG is renamed, disabled or denied)."""
    return await clusters.merged_log(connection, count=count)


@router.get(
    "/commandlog",
    response_model=list[ClusterLogEntry],
    responses=error_responses(404, 409, 422, 501),
)
async def list_cluster_commandlog(
    connection: LiveConnection,
    connections: ConnectionServiceDep,
    clusters: ClustersDep,
    count: Count = 100,
    type: LogType = "slow",
) -> list[ClusterLogEntry]:
    """The command logs of one type from every node, merged newest first (Valkey 8.1+)."""
    seen = connections.last_seen(connection)
    if seen is None or seen.identity is None or not seen.identity.capabilities.has_command_log:
        raise NotSupported(COMMANDLOG_UNSUPPORTED)
    return await clusters.merged_log(connection, count=count, log_type=type)


@router.get("/clients", response_model=list[ClusterClient], responses=error_responses(404, 409))
async def list_cluster_clients(
    connection: LiveConnection, clusters: ClustersDep
) -> list[ClusterClient]:
    """Clients of every node, each naming its node; the monitor's own connections are
    left out."""
    return await clusters.merged_clients(connection)


@live_router.get("/info", response_model=ClusterInfoRead, responses=_CLUSTER)
async def get_cluster_info(connection: LiveConnection, clusters: ClustersDep) -> ClusterInfoRead:
    """CLUSTER INFO as an object. A server with cluster mode disabled answers 409."""
    return await clusters.cluster_info(connection)


@live_router.get("/nodes", response_model=list[ClusterNodeRead], responses=_CLUSTER)
async def list_cluster_nodes(
    connection: LiveConnection, clusters: ClustersDep
) -> list[ClusterNodeRead]:
    """CLUSTER NODES, parsed: every node with flags, primary, link state and slot ranges,
    including slots being migrated or imported. 409 when cluster mode is disabled."""
    return await clusters.cluster_nodes(connection)


@live_router.get(
    "/slot-stats",
    response_model=SlotStatsRead,
    responses=error_responses(404, 409, 422, 501, 503),
)
async def get_slot_stats(
    connection: LiveConnection,
    clusters: ClustersDep,
    order_by: Annotated[
        Literal["key-count", "cpu-usec"], Query(alias="orderBy", description="sort metric")
    ] = "key-count",
    limit: Annotated[int, Query(ge=1, le=16384, description="at most this many slots")] = 100,
) -> SlotStatsRead:
    """CLUSTER SLOT-STATS (Valkey 8.0+ in cluster mode): the top slots by `orderBy`, keyed by
    slot number; a metric the server does not report is null. 501 when the engine lacks
    it or cluster mode is disabled; 409 for `cpu-usec` when the server does not track it
    (`cluster-slot-stats-enabled no`)."""
    return await clusters.slot_stats(connection, order_by=order_by, limit=limit)
