"""The connection registry: create, edit, test, remove, choose the default.

A connection is tested before it is saved, so the registry only holds instances
that answered once. Connections are read from storage on every call rather than
cached, so several replicas sharing PostgreSQL see each other's edits at once.
"""

import logging
import time
import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from svc_monitor.config import Settings
from svc_monitor.connections.addresses import parse_connection_url, split_host_port
from svc_monitor.connections.live import EngineSnapshot, LiveConnections, PushStatus
from svc_monitor.connections.models import (
    ENV_DEFAULT_ID,
    Connection,
    DbType,
    SshTunnel,
    forced_engine,
)
from svc_monitor.connections.schemas import (
    ConnectionCreate,
    ConnectionFields,
    ConnectionTest,
    ConnectionUpdate,
    SshTunnelIn,
)
from svc_monitor.connections.store import ConnectionStore
from svc_monitor.engine.capabilities import EngineIdentity, detect
from svc_monitor.engine.client import EngineClient, EngineTarget
from svc_monitor.engine.errors import EngineError
from svc_monitor.engine.ledger import CommandLedger
from svc_monitor.errors import AppError, Conflict, NotFound, Unprocessable
from svc_monitor.events import ConnectionsChanged, EventBus
from svc_monitor.storage.app_meta import AppMetaStore

logger = logging.getLogger(__name__)

_SEEDED_KEY = "env_default_seeded"
# Fields whose change means the instance must be tested again before saving.
_REACH_FIELDS = {"host", "port", "username", "password", "tls", "db", "url", "db_type"}


class ConnectionNotFound(NotFound):
    pass


class ConnectionFailed(AppError):
    """The instance did not answer a test, so nothing was saved."""


class NeedsLiveConnection(Conflict):
    """A live-only view (one that sends the instance commands) asked of a push connection."""

    def __init__(self, connection: Connection) -> None:
        super().__init__(
            f"This view needs a live connection: '{connection.name}' is an OTLP push "
            "connection; its metrics arrive from an OpenTelemetry Collector and svc-monitor "
            "sends it no commands"
        )
        self.extra = {"connectionId": connection.id, "source": "push"}


# What a push connection may carry: the Collector reports the address, we dial nothing.
_PUSH_FIELDS = {"name", "host", "port", "set_as_default", "source"}


@dataclass(frozen=True, slots=True)
class TestOutcome:
    identity: EngineIdentity | None
    error: EngineError | None
    latency_ms: float


@dataclass(frozen=True, slots=True)
class _Reach:
    """The resolved address and credentials of a create/update/test request; its field
    names are Connection's, so it spreads straight into one."""

    host: str
    port: int
    username: str
    password: str | None
    tls: bool
    db: int
    db_type: DbType


class ConnectionService:
    """Registry of monitored instances and the default among them."""

    def __init__(
        self,
        store: ConnectionStore,
        live: LiveConnections,
        meta: AppMetaStore,
        settings: Settings,
        bus: EventBus,
    ) -> None:
        self._store = store
        self._live = live
        self._meta = meta
        self._settings = settings
        self._bus = bus

    # --- startup ---

    async def start(self, *, embedded_port: int | None = None) -> None:
        """Encrypt plaintext secrets if a key is now set; create the default from DB_* once."""
        resealed = await self._store.reseal_plaintext()
        if resealed:
            logger.info("encrypted the stored secrets of %d connection(s)", resealed)
        if embedded_port is not None:
            await self._point_default_at_embedded(embedded_port)
        elif await self._meta.get(_SEEDED_KEY) is None:
            if not await self._store.list():
                await self._store.insert(self._from_environment())
            await self._meta.put(_SEEDED_KEY, "1")

    def _from_environment(self, *, host: str | None = None, port: int | None = None) -> Connection:
        s = self._settings
        now = _now_ms()
        password = s.DB_PASSWORD.get_secret_value() if s.DB_PASSWORD else None
        return Connection(
            id=ENV_DEFAULT_ID,
            name="Default",
            host=host or s.DB_HOST,
            port=port or s.DB_PORT,
            username=s.DB_USERNAME,
            password=password,
            tls=s.DB_TLS,
            db=0,
            db_type=s.DB_TYPE.value,
            ssh_tunnel=None,
            is_default=True,
            created_at=now,
            updated_at=now,
        )

    async def _point_default_at_embedded(self, port: int) -> None:
        embedded = replace(self._from_environment(host="127.0.0.1", port=port), name="Embedded")
        existing = {c.id: c for c in await self._store.list()}
        if ENV_DEFAULT_ID in existing:
            await self._store.update(
                replace(embedded, created_at=existing[ENV_DEFAULT_ID].created_at)
            )
            await self._store.set_default(ENV_DEFAULT_ID)
        else:
            await self._store.insert(embedded)

    # --- reads ---

    async def list(self) -> list[Connection]:
        return await self._store.list()

    async def get(self, connection_id: str) -> Connection:
        connection = await self._store.get(connection_id)
        if connection is None:
            raise ConnectionNotFound(f"Connection '{connection_id}' not found", field="id")
        return connection

    async def resolve(self, connection_id: str | None) -> Connection:
        """The connection an X-Connection-Id header names, or the default one."""
        if connection_id is not None:
            try:
                return await self.get(connection_id)
            except ConnectionNotFound:
                raise ConnectionNotFound(
                    f"Connection '{connection_id}' not found (X-Connection-Id)",
                    field="X-Connection-Id",
                ) from None
        default = await self._store.get_default()
        if default is None:
            raise ConnectionNotFound("No connection is configured; add one first")
        return default

    def client(self, connection: Connection) -> EngineClient:
        if connection.pushed:
            raise NeedsLiveConnection(connection)
        if "password" in connection.unreadable:
            raise Conflict(
                f"The stored password of connection '{connection.id}' cannot be decrypted: "
                f"{connection.secret_error}. Enter it again."
            )
        return self._live.client(connection)

    def last_seen(self, connection: Connection) -> EngineSnapshot | None:
        return self._live.snapshot(connection.id)

    def push_status(self, connection: Connection) -> PushStatus | None:
        return self._live.push_status(connection.id) if connection.pushed else None

    def node_client(self, target: EngineTarget) -> EngineClient:
        """A client to another node of a connection's cluster, with the seed's credentials and
        TLS (the caller keeps and closes it)."""
        return self._live.new_client(target)

    def ledger(self, connection: Connection) -> CommandLedger:
        """The commands this monitor has sent the connection's server, and their cost."""
        return self._live.ledger(connection.id)

    def mark_down(self, connection: Connection, error: EngineError) -> None:
        self._live.mark_down(connection.id, error)

    async def check(self, connection: Connection) -> EngineSnapshot:
        if connection.pushed:  # nothing to dial: what the receiver saw last
            status = self._live.push_status(connection.id) or PushStatus(False, _now_ms())
            return status.snapshot()
        self.client(connection)  # refuses undecryptable credentials with a clear message
        return await self._live.check(connection)

    # --- changes ---

    async def test(self, body: ConnectionTest) -> TestOutcome:
        return await self._try(self._reach(body, base=None))

    async def create(self, body: ConnectionCreate) -> Connection:
        if body.source == "push":
            return await self._create_pushed(body)
        reach = self._reach(body, base=None)
        tunnel = self._tunnel(body.ssh_tunnel, base=None)
        await self._require_answer(reach)
        existing = await self._store.list()
        now = _now_ms()
        connection = Connection(
            id=str(uuid.uuid4()),
            name=body.name or f"{reach.host}:{reach.port}",
            **asdict(reach),
            ssh_tunnel=tunnel,
            is_default=body.set_as_default or not any(c.is_default for c in existing),
            created_at=now,
            updated_at=now,
        )
        await self._store.insert(connection)
        self._bus.publish(ConnectionsChanged(connection_id=connection.id))
        logger.info("connection %s added (%s:%d)", connection.id, connection.host, connection.port)
        return connection

    async def update(self, connection_id: str, body: ConnectionUpdate) -> Connection:
        current = await self.get(connection_id)
        changed = body.model_fields_set
        if current.pushed:
            return await self._update_pushed(current, body)
        if "password" in current.unreadable and not changed & {"password", "url"}:
            raise Conflict(
                "The stored password cannot be decrypted with this ENCRYPTION_KEY; "
                "send the password with the change",
                field="password",
            )
        if "sshTunnel" in current.unreadable and "ssh_tunnel" not in changed:
            raise Conflict(
                "The stored SSH tunnel secrets cannot be decrypted with this ENCRYPTION_KEY; "
                "send sshTunnel with the change",
                field="sshTunnel",
            )
        reach = self._reach(body, base=current)
        tunnel = current.ssh_tunnel
        if "ssh_tunnel" in changed:
            tunnel = self._tunnel(body.ssh_tunnel, base=current.ssh_tunnel)
        if changed & _REACH_FIELDS:
            await self._require_answer(reach)
        updated = replace(
            current,
            name=body.name if body.name is not None else current.name,
            **asdict(reach),
            ssh_tunnel=tunnel,
            updated_at=_now_ms(),
            secret_error=None,
            unreadable=frozenset(),
        )
        if not await self._store.update(updated):
            raise ConnectionNotFound(f"Connection '{connection_id}' not found", field="id")
        self._bus.publish(ConnectionsChanged(connection_id=connection_id))
        return updated

    async def set_default(self, connection_id: str) -> Connection:
        if not await self._store.set_default(connection_id):
            raise ConnectionNotFound(f"Connection '{connection_id}' not found", field="id")
        return await self.get(connection_id)

    async def delete(self, connection_id: str) -> None:
        if not await self._store.delete(connection_id):
            raise ConnectionNotFound(f"Connection '{connection_id}' not found", field="id")
        await self._live.forget(connection_id)
        self._bus.publish(ConnectionsChanged(connection_id=connection_id))
        logger.info("connection %s removed", connection_id)

    # --- push connections ---

    async def _create_pushed(self, body: ConnectionCreate) -> Connection:
        _refuse_credentials(body)
        reach = self._reach(body, base=None)
        existing = await self._store.list()
        await self._require_unique_address(reach.host, reach.port, existing, except_id=None)
        now = _now_ms()
        connection = Connection(
            id=str(uuid.uuid4()),
            name=body.name or f"{reach.host}:{reach.port}",
            host=reach.host,
            port=reach.port,
            username="default",
            password=None,
            tls=False,
            db=0,
            db_type="auto",
            ssh_tunnel=None,
            is_default=body.set_as_default or not any(c.is_default for c in existing),
            created_at=now,
            updated_at=now,
            source="push",
        )
        await self._store.insert(connection)
        self._bus.publish(ConnectionsChanged(connection_id=connection.id))
        logger.info("push connection %s added (%s:%d)", connection.id, reach.host, reach.port)
        return connection

    async def _update_pushed(self, current: Connection, body: ConnectionUpdate) -> Connection:
        _refuse_credentials(body)
        reach = self._reach(body, base=current)
        if (reach.host, reach.port) != (current.host, current.port):
            existing = await self._store.list()
            await self._require_unique_address(
                reach.host, reach.port, existing, except_id=current.id
            )
        updated = replace(
            current,
            name=body.name if body.name is not None else current.name,
            host=reach.host,
            port=reach.port,
            updated_at=_now_ms(),
        )
        if not await self._store.update(updated):
            raise ConnectionNotFound(f"Connection '{current.id}' not found", field="id")
        self._bus.publish(ConnectionsChanged(connection_id=current.id))
        return updated

    @staticmethod
    async def _require_unique_address(
        host: str, port: int, existing: "Sequence[Connection]", *, except_id: str | None
    ) -> None:
        """Pushed points are matched to a connection by host:port: one owner per address."""
        for other in existing:
            if other.id != except_id and (other.host.lower(), other.port) == (host.lower(), port):
                how = "pushes to" if other.pushed else "is polled as"
                raise Conflict(
                    f"{host}:{port} already {how} connection '{other.name}'", field="host"
                )

    # --- helpers ---

    async def _require_answer(self, reach: _Reach) -> None:
        outcome = await self._try(reach)
        if outcome.error is not None:
            raise ConnectionFailed(f"Connection failed: {outcome.error.message}")

    async def _try(self, reach: _Reach) -> TestOutcome:
        target = EngineTarget(
            host=reach.host,
            port=reach.port,
            username=reach.username,
            password=reach.password,
            tls=reach.tls,
            db=reach.db,
            tls_ca_file=self._live.tls_ca_file,
        )
        client = self._live.new_client(target)
        started = time.perf_counter()
        try:
            identity = await detect(client, forced_type=forced_engine(reach.db_type))
            return TestOutcome(identity, None, _elapsed_ms(started))
        except EngineError as exc:
            return TestOutcome(None, exc, _elapsed_ms(started))
        finally:
            await client.close()

    def _reach(self, body: ConnectionFields, *, base: Connection | None) -> _Reach:
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
        return _Reach(
            host=host,
            port=port or 6379,
            username=username,
            password=password,
            tls=body.tls if body.tls is not None else tls,
            db=body.db if body.db is not None else db,
            db_type=body.db_type or (base.db_type if base else "auto"),
        )

    def _tunnel(self, body: SshTunnelIn | None, *, base: SshTunnel | None) -> SshTunnel | None:
        if body is None:
            return None
        if body.private_key_path is not None:
            self._check_key_path(body.private_key_path)
        # Secrets left out of an edit keep their stored values.
        keep = base if base is not None and base.host == body.host else None
        return SshTunnel(
            host=body.host,
            port=body.port,
            username=body.username,
            password=_given_or(body.password, keep.password if keep else None),
            private_key=_given_or(body.private_key, keep.private_key if keep else None),
            passphrase=_given_or(body.passphrase, keep.passphrase if keep else None),
            private_key_path=body.private_key_path,
            host_key_fingerprint=body.host_key_fingerprint,
        )

    def _check_key_path(self, relative: str) -> None:
        key_dir = self._settings.SVC_SSH_KEY_DIR
        field = "sshTunnel.privateKeyPath"
        if key_dir is None:
            raise Unprocessable(
                f"{field}: key files are disabled: SVC_SSH_KEY_DIR is not set", field=field
            )
        root = key_dir.expanduser().resolve()
        candidate = (root / Path(relative)).resolve()
        if Path(relative).is_absolute() or not candidate.is_relative_to(root):
            raise Unprocessable(f"{field}: must be a path inside SVC_SSH_KEY_DIR", field=field)


def _refuse_credentials(body: ConnectionFields) -> None:
    """A push connection is never dialled: credentials, TLS, tunnel or URL have no use."""
    for name in sorted(body.model_fields_set - _PUSH_FIELDS):
        if getattr(body, name) is not None:
            field = ConnectionFields.model_fields[name].alias or name
            raise Unprocessable(
                f"{field}: a push connection takes only name, host and port "
                "(its Collector reaches the instance; svc-monitor never connects to it)",
                field=field,
            )


def _given_or(given: str | None, stored: str | None) -> str | None:
    """An absent secret keeps the stored one; an empty one clears it."""
    if given is None:
        return stored
    return given or None


def _now_ms() -> int:
    return int(time.time() * 1000)


def _elapsed_ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 2)
