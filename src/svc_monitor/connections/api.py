"""HTTP routes of the connection registry (under /api)."""

from typing import Annotated

from fastapi import APIRouter, Path, Response, status

from svc_monitor.api.dependencies import ServicesDep
from svc_monitor.api.error_responses import error_responses
from svc_monitor.connections.dependencies import ConnectionServiceDep
from svc_monitor.connections.schemas import (
    ConnectionCreate,
    ConnectionRead,
    ConnectionTest,
    ConnectionTestResult,
    ConnectionUpdate,
    DiscoveredRead,
    to_read,
    to_test_result,
)
from svc_monitor.errors import NotFound

router = APIRouter(prefix="/connections", tags=["connections"])


@router.get("", response_model=list[ConnectionRead])
async def list_connections(connections: ConnectionServiceDep) -> list[ConnectionRead]:
    """All connections, the default one flagged, each with its engine as last seen.

    Passwords and keys are never returned; `hasPassword` says whether one is stored.
    """
    return [
        to_read(c, connections.last_seen(c), connections.push_status(c))
        for c in await connections.list()
    ]


@router.post(
    "",
    response_model=ConnectionRead,
    status_code=status.HTTP_201_CREATED,
    responses=error_responses(400, 422),
)
async def create_connection(
    body: ConnectionCreate, connections: ConnectionServiceDep
) -> ConnectionRead:
    """Test a connection, then save it. Answers 400 with the engine's error if it does not answer.

    Give `host` and `port` (or `host` as `host:port`), or paste a quick-connect `url`
    (`redis://user:password@host:port/db`, `rediss://` for TLS); explicit fields win over
    the URL. The first connection, or one sent with `setAsDefault`, becomes the default.
    A 400 carries `errorKind` and a `hint` (also appended to `message`). TLS material
    (`tlsCaCert`, `tlsCert`, `tlsKey`) is checked first: 422 naming the field if it is
    not what it should be.
    """
    connection = await connections.create(body)
    return to_read(
        connection, connections.last_seen(connection), connections.push_status(connection)
    )


@router.post("/test", response_model=ConnectionTestResult, responses=error_responses(422))
async def test_connection(
    body: ConnectionTest, connections: ConnectionServiceDep
) -> ConnectionTestResult:
    """Try a connection without saving it.

    Always 200 for a well-formed body: `success` says whether the engine answered, and
    `error` carries its words (for example `WRONGPASS invalid username-password pair`).
    `hint` says what such a failure usually means: a wrong port, TLS missing or against a
    plain port, an untrusted certificate or host name mismatch, a managed provider's token.
    """
    return to_test_result(await connections.test(body))


@router.get("/discovered", response_model=list[DiscoveredRead])
async def list_discovered(services: ServicesDep) -> list[DiscoveredRead]:
    """Instances pushing metrics to `/v1/external/metrics` that no connection is registered
    for, most recent first. Memory only: at most 200, each forgotten 24 h after its last push,
    reset on restart. Empty when OTLP_DISCOVER_INSTANCES is off."""
    return [
        DiscoveredRead(
            address=d.address,
            name=d.name,
            host=d.host,
            port=d.port,
            firstSeenAt=d.first_seen_ms,
            lastSeenAt=d.last_seen_ms,
        )
        for d in services.discovery.visible()
    ]


@router.post(
    "/discovered/{address}/dismiss",
    status_code=status.HTTP_204_NO_CONTENT,
    responses=error_responses(404),
)
async def dismiss_discovered(
    address: Annotated[str, Path(max_length=300, description="host:port of the entry")],
    services: ServicesDep,
) -> Response:
    """Hide a discovered instance for 24 hours."""
    if not services.discovery.dismiss(address):
        raise NotFound(f"No discovered instance at '{address}'", field="address")
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.get("/{connection_id}", response_model=ConnectionRead, responses=error_responses(404))
async def get_connection(connection_id: str, connections: ConnectionServiceDep) -> ConnectionRead:
    """One connection."""
    connection = await connections.get(connection_id)
    return to_read(
        connection, connections.last_seen(connection), connections.push_status(connection)
    )


@router.put(
    "/{connection_id}", response_model=ConnectionRead, responses=error_responses(400, 404, 409, 422)
)
async def update_connection(
    connection_id: str, body: ConnectionUpdate, connections: ConnectionServiceDep
) -> ConnectionRead:
    """Change a connection. Absent fields keep their values; `password: ""` removes it.

    A change of address or credentials is tested first and refused (400) if the engine
    does not answer; the stored connection is then left as it was.
    """
    connection = await connections.update(connection_id, body)
    return to_read(
        connection, connections.last_seen(connection), connections.push_status(connection)
    )


@router.post(
    "/{connection_id}/default", response_model=ConnectionRead, responses=error_responses(404)
)
async def set_default_connection(
    connection_id: str, connections: ConnectionServiceDep
) -> ConnectionRead:
    """Make this the connection used when a request carries no X-Connection-Id."""
    connection = await connections.set_default(connection_id)
    return to_read(
        connection, connections.last_seen(connection), connections.push_status(connection)
    )


@router.post(
    "/{connection_id}/ssh/repin",
    response_model=ConnectionRead,
    responses=error_responses(404, 409),
)
async def repin_ssh_host_key(
    connection_id: str, connections: ConnectionServiceDep
) -> ConnectionRead:
    """Forget the SSH bastion's pinned host key (admins): the next connection trusts the
    key it is shown and pins it again. For a bastion whose key changed on purpose; until
    then a changed key is refused. 409 when the connection has no SSH tunnel."""
    connection = await connections.repin_ssh_host_key(connection_id)
    return to_read(
        connection, connections.last_seen(connection), connections.push_status(connection)
    )


@router.post(
    "/{connection_id}/test",
    response_model=ConnectionTestResult,
    responses=error_responses(404, 409, 422),
)
async def test_connection_change(
    connection_id: str, body: ConnectionUpdate, connections: ConnectionServiceDep
) -> ConnectionTestResult:
    """Try a stored connection as a change would leave it, saving nothing.

    The body is a `PUT` body: absent fields keep their stored values, so the stored
    password, TLS client key and SSH secrets are used without being sent again
    (`{}` tries the connection as it is). Answers as `POST /api/connections/test`;
    409 for a push connection (never dialled) or a stored secret this ENCRYPTION_KEY
    cannot decrypt and the body does not replace.
    """
    return to_test_result(await connections.test_change(connection_id, body))


@router.delete(
    "/{connection_id}", status_code=status.HTTP_204_NO_CONTENT, responses=error_responses(404)
)
async def delete_connection(connection_id: str, connections: ConnectionServiceDep) -> Response:
    """Remove a connection. If it was the default, the oldest remaining one becomes default."""
    await connections.delete(connection_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
