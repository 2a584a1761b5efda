"""FastAPI dependencies of the client analytics domain."""

from typing import Annotated

from fastapi import Depends, Query

from svc_monitor.api.dependencies import FeaturesDep
from svc_monitor.api.params import HistoryPage
from svc_monitor.client_analytics.models import SnapshotFilter
from svc_monitor.client_analytics.service import ClientAnalyticsService
from svc_monitor.connections.dependencies import SelectedConnection


def get_client_analytics(features: FeaturesDep) -> ClientAnalyticsService:
    return features.client_analytics


ClientAnalyticsDep = Annotated[ClientAnalyticsService, Depends(get_client_analytics)]

Name = Annotated[str | None, Query(max_length=256, description="client name (CLIENT SETNAME)")]
User = Annotated[str | None, Query(max_length=256, description="ACL username")]
Addr = Annotated[str | None, Query(max_length=128, description="host:port, or a host alone")]


def client_filter(
    connection: SelectedConnection,
    page: HistoryPage,
    name: Name = None,
    user: User = None,
    addr: Addr = None,
) -> SnapshotFilter:
    """The selected connection's snapshots in the page's window, of the clients named.

    The query lists `name`, `user`, `addr` before the page's `from`, `to`, `limit`
    and `offset`: FastAPI lists a dependency's own parameters before those of the
    dependencies it takes, wherever they stand in the signature."""
    return SnapshotFilter(connection.id, page.since, page.until, name, user, addr)


# The snapshots a list route reads. The route takes `page: HistoryPage` as well, for its
# limit and offset: FastAPI solves that dependency once per request, for both.
ClientFilter = Annotated[SnapshotFilter, Depends(client_filter)]
