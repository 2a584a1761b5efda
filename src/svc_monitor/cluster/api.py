"""Cluster-wide routes (under /api): every node, from one seed connection."""

from typing import Annotated, Literal

from fastapi import APIRouter, Query

from svc_monitor.api.error_responses import error_responses
from svc_monitor.cluster.dependencies import ClustersDep
from svc_monitor.cluster.schemas import ClusterClient, ClusterLogEntry, ClusterNodeStats
from svc_monitor.connections.dependencies import ConnectionServiceDep, SelectedConnection
from svc_monitor.errors import NotSupported
from svc_monitor.slowlog.service import COMMANDLOG_UNSUPPORTED

router = APIRouter(prefix="/metrics/cluster", tags=["cluster"])


@router.get(
    "/node-stats", response_model=list[ClusterNodeStats], responses=error_responses(404, 409)
)
async def list_node_stats(
    connection: SelectedConnection, clusters: ClustersDep
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
    connection: SelectedConnection, clusters: ClustersDep, count: Count = 100
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
    connection: SelectedConnection,
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
    connection: SelectedConnection, clusters: ClustersDep
) -> list[ClusterClient]:
    """Clients of every node, each naming its node; the monitor's own connections are
    left out."""
    return await clusters.merged_clients(connection)
