"""Cluster-wide routes (under /api): every node, from one seed connection."""

from typing import Annotated

from fastapi import APIRouter, Query

from svc_monitor.cluster.dependencies import ClustersDep
from svc_monitor.cluster.schemas import ClusterNodeStats, ClusterSlowlogEntry
from svc_monitor.connections.dependencies import SelectedConnection
from svc_monitor.errors import error_responses

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


@router.get(
    "/slowlog", response_model=list[ClusterSlowlogEntry], responses=error_responses(404, 409, 422)
)
async def list_cluster_slowlog(
    connection: SelectedConnection,
    clusters: ClustersDep,
    count: Annotated[int, Query(ge=1, le=10_000, description="entries per node and in all")] = 100,
) -> list[ClusterSlowlogEntry]:
    """The slow logs of every node, read live and merged newest first; each entry names
    the node (host:port) that logged it."""
    return await clusters.merged_slowlog(connection, count=count)
