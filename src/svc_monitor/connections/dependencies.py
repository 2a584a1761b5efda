"""FastAPI dependencies of the connections domain, used by every connection-scoped route."""

from collections.abc import Sequence
from typing import Annotated, Any

from fastapi import Depends, Header
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute, iter_route_contexts
from starlette.routing import BaseRoute

from svc_monitor.api.dependencies import ServicesDep
from svc_monitor.connections.models import Connection
from svc_monitor.connections.service import ConnectionService, NeedsLiveConnection


def get_connection_service(services: ServicesDep) -> ConnectionService:
    return services.connections


ConnectionServiceDep = Annotated[ConnectionService, Depends(get_connection_service)]


async def selected_connection(
    connections: ConnectionServiceDep,
    x_connection_id: Annotated[
        str | None,
        Header(
            description="The connection this request is about; absent means the default one",
            max_length=64,
        ),
    ] = None,
) -> Connection:
    return await connections.resolve(x_connection_id)


SelectedConnection = Annotated[Connection, Depends(selected_connection)]


async def live_connection(connection: SelectedConnection) -> Connection:
    """The selected connection, for a route that sends its server commands.

    A push connection is refused here, before the route runs, so every live-only route
    gives the same answer whatever it would have checked first (capabilities, cluster
    mode, freshness of the pushed fields). Its presence in a route's dependencies is also
    what marks the route live-only in the OpenAPI document (LIVE_ONLY_EXTENSION).
    """
    if connection.pushed:
        raise NeedsLiveConnection(connection)
    return connection


LiveConnection = Annotated[Connection, Depends(live_connection)]

LIVE_ONLY_EXTENSION = "x-live-only"


def is_live_only(route: APIRoute) -> bool:
    """Whether the route depends on `live_connection`, directly or through another
    dependency."""
    pending: list[Dependant] = [route.dependant]
    while pending:
        dependant = pending.pop()
        if dependant.call is live_connection:
            return True
        pending.extend(dependant.dependencies)
    return False


def mark_live_only(document: dict[str, Any], routes: Sequence[BaseRoute]) -> None:
    """Flag each live-only operation of `document` with `x-live-only: true` and its 409.

    `routes` are the app's: included routers are walked as FastAPI's own document
    builder walks them, so the paths match the document's."""
    paths: dict[str, dict[str, Any]] = document.get("paths", {})
    for context in iter_route_contexts(routes):
        route = context.original_route
        if not isinstance(route, APIRoute) or not is_live_only(route):
            continue
        for method in route.methods or ():
            operation = paths.get(context.path_format or "", {}).get(method.lower())
            if operation is None:
                continue  # left out of the document (include_in_schema=False)
            operation[LIVE_ONLY_EXTENSION] = True
            responses = operation.setdefault("responses", {})
            responses.setdefault("409", {"description": "Conflict"})
            responses["409"]["description"] += _PUSHED_NOTE


_PUSHED_NOTE = "; also when the connection is a push connection (this view needs a live one)"
