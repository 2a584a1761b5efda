"""FastAPI dependencies of the connections domain, used by every connection-scoped route."""

from typing import Annotated

from fastapi import Depends, Header

from svc_monitor.api.dependencies import ServicesDep
from svc_monitor.connections.models import Connection
from svc_monitor.connections.service import ConnectionService


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
