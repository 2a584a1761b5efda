"""Where a create, edit or test request points: the quick-connect URL, `host:port` and the
explicit fields merged over what is stored (a provider's endpoint comes as host:port in
one field, or as a redis:// / rediss:// URL: docs/features/connections.md#fields)."""

from dataclasses import dataclass, field

from svc_monitor.connections.models import Connection, DbType
from svc_monitor.connections.schemas import ConnectionFields
from svc_monitor.connections.tls_fields import tls_material
from svc_monitor.errors import Unprocessable
from svc_monitor.kit.addresses import parse_connection_url, split_host_port


@dataclass(frozen=True, slots=True)
class Reach:
    """The resolved address and credentials of a create/update/test request; its field
    names are Connection's, so it spreads straight into one."""

    host: str
    port: int
    username: str
    password: str | None
    tls: bool
    db: int
    db_type: DbType
    tls_ca_cert: str | None
    tls_cert: str | None
    tls_key: str | None = field(repr=False)
    tls_insecure: bool


def merge_reach(body: ConnectionFields, *, base: Connection | None) -> Reach:
    """Merge URL, `host:port` and explicit fields; explicit fields win over the URL."""
    host = base.host if base else None
    port = base.port if base else None
    username = base.username if base else "default"
    password = base.password if base else None
    tls = base.tls if base else False
    db = base.db if base else 0
    if body.url is not None:
        url = parse_connection_url(body.url)
        host, port, tls = url.host, url.port or 6379, url.tls
        username = url.username or "default"
        password = url.password
        db = url.db if url.db is not None else 0
    if body.host is not None:
        host, host_port = split_host_port(body.host)
        if host_port is not None:
            if body.port is not None and body.port != host_port:
                raise Unprocessable(
                    f"port {body.port} disagrees with the port in host ({host_port})",
                    field="port",
                )
            port = host_port
    if body.port is not None:
        port = body.port
    if host is None:
        raise Unprocessable("host (or url) is required", field="host")
    if body.username is not None:
        username = body.username or "default"
    if body.password is not None:
        password = body.password or None  # "" clears a stored password
    return Reach(
        host=host,
        port=port or 6379,
        username=username,
        password=password,
        tls=body.tls if body.tls is not None else tls,
        db=body.db if body.db is not None else db,
        db_type=body.db_type or (base.db_type if base else "auto"),
        **tls_material(body, base),
    )
