"""The connection registry: create, edit, test, remove, choose the default.

A connection is tested before it is saved, so the registry only holds instances
that answered once. Connections are read from storage on every call rather than
cached, so several replicas sharing PostgreSQL see each other's edits at once.
"""

import logging
import time
import uuid
from collections.abc import Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import TYPE_CHECKING

from svc_monitor.config import Settings
from svc_monitor.connections import replica_reads
from svc_monitor.connections.hints import hint_for
from svc_monitor.connections.live_connections import LiveConnections
from svc_monitor.connections.models import (
    AGENT_HOST_PREFIX,
    ENV_DEFAULT_ID,
    Connection,
    EngineSnapshot,
    PushStatus,
    SshTunnel,
    TestOutcome,
    forced_engine,
    require_feature,
)
from svc_monitor.connections.reach import Reach, merge_reach
from svc_monitor.connections.schemas import (
    ConnectionCreate,
    ConnectionFields,
    ConnectionTest,
    ConnectionUpdate,
    SshTunnelIn,
)
from svc_monitor.connections.store import ConnectionStore
from svc_monitor.connections.tls_fields import TLS_FIELDS
from svc_monitor.connections.tunnels import merge_tunnel
from svc_monitor.engine.agent_link import AgentLinks
from svc_monitor.engine.capabilities import Feature, detect
from svc_monitor.engine.client import EngineClient, EngineTarget
from svc_monitor.engine.errors import EngineError
from svc_monitor.engine.info import ParsedInfo
from svc_monitor.engine.ledger import CommandLedger
from svc_monitor.errors import AppError, Conflict, NotFound, Unprocessable
from svc_monitor.events import ConnectionsChanged, EventBus
from svc_monitor.kit import cloud_ports
from svc_monitor.storage.app_meta import AppMetaStore

if TYPE_CHECKING:  # loaded with the first tunnel (connections/tunnels.py)
    from svc_monitor.engine.ssh_tunnel import SshForward

logger = logging.getLogger(__name__)

_SEEDED_KEY = "env_default_seeded"
# The id of the connection that watches the embedded Valkey of the last start, "" for none.
_EMBEDDED_KEY = "embedded_valkey_connection"
# Its id when `env-default` is an instance of the user's.
EMBEDDED_ID = "embedded"
# Fields whose change means the instance must be tested again before saving.
_REACH_FIELDS = {"host", "port", "username", "password", "tls", "db", "url", "db_type"}
_REACH_FIELDS |= TLS_FIELDS | {"ssh_tunnel"}


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
        live.tunnels.on_pin = self.remember_pin

    # --- startup ---

    async def start(self, *, embedded_port: int | None = None) -> None:
        """Encrypt plaintext secrets if a key is now set; create the default from DB_* once.

        An embedded Valkey (`make run` without DB_HOST) gets a new port at every start and
        is gone when the process ends: its connection is pointed at the new port, and a
        start without one retires it, so lasting storage never keeps a dead default."""
        resealed = await self._store.reseal_plaintext()
        if resealed:
            logger.info("encrypted the stored secrets of %d connection(s)", resealed)
        if embedded_port is not None:
            await self._watch_embedded(embedded_port)
            return
        await self._retire_embedded()
        if await self._meta.get(_SEEDED_KEY) is None:
            if not await self._store.list():
                await self._store.insert(self._from_environment())
            await self._meta.put(_SEEDED_KEY, "1")
        else:
            await self._say_if_the_environment_moved()

    async def _say_if_the_environment_moved(self) -> None:
        """DB_HOST and DB_PORT create the default connection on the first start only; one
        line at each later start when those given differ from it, since otherwise the
        changed variables are ignored without a word."""
        s = self._settings
        given = {"DB_HOST", "DB_PORT"} & s.model_fields_set
        stored = await self._store.get(ENV_DEFAULT_ID) if given else None
        if stored is None:
            return
        moved_host = "DB_HOST" in given and stored.host.casefold() != s.DB_HOST.casefold()
        moved_port = "DB_PORT" in given and stored.port != s.DB_PORT
        if not (moved_host or moved_port):
            return
        logger.warning(
            "DB_HOST/DB_PORT say %s, but the connection made from them on the first start "
            "(%r, id %s) is stored with %s, and the stored one is used: the environment "
            "only creates it. Change it with Edit in the UI's connection dialog or with "
            "PUT /api/connections/%s (host, port)",
            _address(s.DB_HOST, s.DB_PORT),
            stored.name,
            ENV_DEFAULT_ID,
            _address(stored.host, stored.port),
            ENV_DEFAULT_ID,
        )

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
            tls_ca_cert=_read(s.DB_TLS_CA_FILE),
            tls_cert=_read(s.DB_TLS_CERT_FILE),
            tls_key=_read(s.DB_TLS_KEY_FILE),
        )

    async def _watch_embedded(self, port: int) -> None:
        """The embedded Valkey is `env-default` unless that connection is an instance of
        the user's (from DB_* on an earlier start): then it is kept, and the embedded one
        is watched beside it."""
        existing = {c.id: c for c in await self._store.list()}
        previous = await self._meta.get(_EMBEDDED_KEY) or None
        if previous is None and ENV_DEFAULT_ID in existing:
            connection_id = EMBEDDED_ID
        else:
            connection_id = previous or ENV_DEFAULT_ID
        embedded = replace(
            self._from_environment(host="127.0.0.1", port=port), id=connection_id, name="Embedded"
        )
        if connection_id in existing:
            # Only the address moves: whether it is the default stays the user's choice.
            await self._store.update(
                replace(embedded, created_at=existing[connection_id].created_at)
            )
        else:
            has_default = any(c.is_default for c in existing.values())
            await self._store.insert(replace(embedded, is_default=not has_default))
        await self._meta.put(_EMBEDDED_KEY, connection_id)

    async def _retire_embedded(self) -> None:
        """After a run with an embedded Valkey, its connection points at a port nobody
        listens on: `env-default` becomes the DB_* instance again (as on a first start),
        one watched beside it is removed."""
        connection_id = await self._meta.get(_EMBEDDED_KEY)
        if not connection_id:
            return
        current = await self._store.get(connection_id)
        if current is not None and connection_id == ENV_DEFAULT_ID:
            seeded = replace(self._from_environment(), created_at=current.created_at)
            await self._store.update(seeded)
            await self._meta.put(_SEEDED_KEY, "1")
            logger.info(
                "connection %s watched the last run's embedded Valkey; it now watches %s:%d",
                connection_id,
                seeded.host,
                seeded.port,
            )
        elif current is not None:
            await self._store.delete(connection_id)
            logger.info("removed connection %s: the last run's embedded Valkey", connection_id)
        await self._meta.put(_EMBEDDED_KEY, "")

    # --- reads ---

    async def list(self) -> list[Connection]:
        return await self._store.list()

    async def find(self, connection_id: str) -> Connection | None:
        """The connection, or None when there is none by that id."""
        return await self._store.get(connection_id)

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
        if "tlsKey" in connection.unreadable:
            raise Conflict(
                f"The stored TLS client key of connection '{connection.id}' cannot be "
                f"decrypted: {connection.secret_error}. Enter tlsKey again."
            )
        return self._live.client(connection)

    def last_seen(self, connection: Connection) -> EngineSnapshot | None:
        return self._live.snapshot(connection.id)

    def push_status(self, connection: Connection) -> PushStatus | None:
        return self._live.push_status(connection.id) if connection.pushed else None

    def set_push_status(self, connection_id: str, status: PushStatus) -> None:
        """What the OTLP receiver knows of a push connection now (memory only)."""
        self._live.set_push_status(connection_id, status)

    def target(self, connection: Connection) -> EngineTarget:
        """Where and how to reach the connection's server (through its tunnel, if any)."""
        return self._live.target(connection)

    def node_client(self, target: EngineTarget) -> EngineClient:
        """A client of its own to `target` (a node of a connection's cluster, or the
        connection itself for a console session), with the seed's credentials and TLS; the
        caller keeps and closes it."""
        return self._live.new_client(target)

    async def fit_replica(
        self, client: EngineClient, info: ParsedInfo, *, cluster: bool = False
    ) -> EngineClient | None:
        """A replica of `client`'s server fit for a whole-keyspace read, or None (the rule:
        connections/replica_reads.py); the caller closes it. `info` is the server's INFO."""
        return await replica_reads.fit_replica(self.node_client, client, info, cluster=cluster)

    async def require_live_feature(self, connection: Connection, feature: Feature) -> None:
        """require_feature (models.py) on the connection's engine, detected first if it was
        never checked.

        An engine known to be down is not asked again here (a page or a history read must
        not wait out a connect timeout) nor refused: a live read then fails on its own with
        503. Nor is a push connection, which no command reaches and whose routes say so.
        """
        if connection.pushed:
            return
        seen = self.last_seen(connection)
        if seen is None:
            seen = await self.check(connection)
        require_feature(seen.identity, feature)

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
        reach = merge_reach(body, base=None)
        tunnel = self._tunnel(body.ssh_tunnel, base=None)
        self._require_cloud_ports(reach, tunnel)
        return await self._try(reach, tunnel)

    async def create(self, body: ConnectionCreate) -> Connection:
        if body.source == "agent":
            raise Unprocessable(
                "source: an agent connection is made with its agent token "
                "(POST /api/agent-tokens), which the agent then dials in with",
                field="source",
            )
        if body.source == "push":
            return await self._create_pushed(body)
        reach = merge_reach(body, base=None)
        tunnel = self._tunnel(body.ssh_tunnel, base=None)
        if body.source == "poll":
            self._require_cloud_ports(reach, tunnel)
        tunnel = await self._require_answer(reach, tunnel)
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

    async def test_change(self, connection_id: str, body: ConnectionUpdate) -> TestOutcome:
        """Try a stored connection as `body` would change it, saving nothing: what the
        body leaves out (the password, TLS key, SSH secrets and pin) comes from storage,
        so an Edit dialog's Test needs no secret typed again."""
        current = await self.get(connection_id)
        if current.pushed:
            raise Conflict(
                "A push connection is never dialled: its Collector reaches the instance",
                field="id",
            )
        reach, tunnel = self._changed(current, body)
        if current.source == "poll":
            self._require_cloud_ports(reach, tunnel)
        return await self._try(reach, tunnel)

    async def update(self, connection_id: str, body: ConnectionUpdate) -> Connection:
        current = await self.get(connection_id)
        changed = body.model_fields_set
        if current.pushed:
            return await self._update_pushed(current, body)
        if current.via_agent:
            return await self._update_agent(current, body)
        reach, tunnel = self._changed(current, body)
        if changed & _REACH_FIELDS:
            if current.source == "poll":
                self._require_cloud_ports(reach, tunnel)
            tunnel = await self._require_answer(reach, tunnel)
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
        if _pin(tunnel) != _pin(current.ssh_tunnel):
            await self._live.drop_tunnel(connection_id)  # the next use trusts the new pin
        self._bus.publish(ConnectionsChanged(connection_id=connection_id))
        return updated

    async def remember_pin(self, connection_id: str, fingerprint: str) -> None:
        """Store the first host key a connection's bastion showed (trust on first use).
        Nothing is published: the pin changes nothing a poller holds, and the tunnel that
        pinned it stays up (tunnels.py)."""
        connection = await self._store.get(connection_id)
        tunnel = connection.ssh_tunnel if connection is not None else None
        if connection is None or tunnel is None or tunnel.host_key_fingerprint is not None:
            return  # removed, untunnelled or pinned meanwhile: nothing to remember
        pinned = replace(tunnel, host_key_fingerprint=fingerprint)
        await self._store.update(replace(connection, ssh_tunnel=pinned))
        logger.info(
            "connection %s: pinned the SSH host key of %s:%d (%s)",
            connection_id,
            tunnel.host,
            tunnel.port,
            fingerprint,
        )

    async def repin_ssh_host_key(self, connection_id: str) -> Connection:
        """Forget the pinned bastion key: the next connection trusts and pins the key it is
        shown (for a bastion rebuilt on purpose)."""
        current = await self.get(connection_id)
        if current.ssh_tunnel is None:
            raise Conflict(
                f"Connection '{current.name}' has no SSH tunnel to re-pin", field="sshTunnel"
            )
        updated = replace(
            current,
            ssh_tunnel=replace(current.ssh_tunnel, host_key_fingerprint=None),
            updated_at=_now_ms(),
        )
        if not await self._store.update(updated):
            raise ConnectionNotFound(f"Connection '{connection_id}' not found", field="id")
        await self._live.drop_tunnel(connection_id)
        logger.warning(
            "connection %s: SSH host key pin of %s:%d cleared; the next key seen is trusted",
            connection_id,
            current.ssh_tunnel.host,
            current.ssh_tunnel.port,
        )
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
        reach = merge_reach(body, base=None)
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

    async def create_agent(self, name: str) -> Connection:
        """A connection reached through an agent, made with its token: no address, no
        credentials (the agent holds them), nothing dialled until the agent links."""
        existing = await self._store.list()
        now = _now_ms()
        connection_id = str(uuid.uuid4())
        connection = Connection(
            id=connection_id,
            name=name,
            host=AGENT_HOST_PREFIX + connection_id[:8],
            port=0,
            username="default",
            password=None,
            tls=False,
            db=0,
            db_type="auto",
            ssh_tunnel=None,
            is_default=not any(c.is_default for c in existing),
            created_at=now,
            updated_at=now,
            source="agent",
        )
        await self._store.insert(connection)
        self._bus.publish(ConnectionsChanged(connection_id=connection.id))
        logger.info("agent connection %s added (%s)", connection.id, name)
        return connection

    async def _update_agent(self, current: Connection, body: ConnectionUpdate) -> Connection:
        """Only the name: where the instance is and how to log in is the agent's to say."""
        others = sorted(body.model_fields_set - {"name", "set_as_default"})
        if others:
            field = ConnectionFields.model_fields[others[0]].alias or others[0]
            raise Unprocessable(
                f"{field}: an agent connection is reached through its agent; set the "
                "instance's address and credentials on the agent (DB_HOST, DB_PORT, ...)",
                field=field,
            )
        return await self._save(replace(current, name=body.name or current.name))

    async def _save(self, updated: Connection) -> Connection:
        """Store an edit of a connection that is dialled the same way (or never): no test,
        no tunnel to drop; the pollers take it from the change event."""
        updated = replace(updated, updated_at=_now_ms())
        if not await self._store.update(updated):
            raise ConnectionNotFound(f"Connection '{updated.id}' not found", field="id")
        self._bus.publish(ConnectionsChanged(connection_id=updated.id))
        return updated

    @property
    def agent_links(self) -> "AgentLinks":
        """The live links of agent connections (engine/agent_link.py)."""
        return self._live.agent_links

    async def _update_pushed(self, current: Connection, body: ConnectionUpdate) -> Connection:
        _refuse_credentials(body)
        reach = merge_reach(body, base=current)
        if (reach.host, reach.port) != (current.host, current.port):
            existing = await self._store.list()
            await self._require_unique_address(
                reach.host, reach.port, existing, except_id=current.id
            )
        name = body.name if body.name is not None else current.name
        return await self._save(replace(current, name=name, host=reach.host, port=reach.port))

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

    def _require_cloud_ports(self, reach: Reach, tunnel: SshTunnel | None) -> None:
        """In cloud mode, refuse a polled connection on a port the service does not dial
        (kit/cloud_ports.py): the instance's own, or its bastion's when it is tunnelled,
        which is then what the service connects to. Push and agent connections are never
        dialled, so their callers leave them out."""
        if not self._settings.CLOUD_MODE:
            return
        if not cloud_ports.dialled_in_cloud(reach.port):
            raise Unprocessable(f"port: {cloud_ports.refusal(reach.port)}", field="port")
        if tunnel is not None and not cloud_ports.dialled_in_cloud(tunnel.port):
            raise Unprocessable(
                f"sshTunnel.port: {cloud_ports.refusal(tunnel.port)}", field="sshTunnel.port"
            )

    async def _require_answer(self, reach: Reach, tunnel: SshTunnel | None) -> SshTunnel | None:
        """Test before saving; the tunnel to store, pinned to the key the test was shown
        when it had no pin (so trust on first use happens while the admin is looking)."""
        outcome = await self._try(reach, tunnel)
        if outcome.error is not None:
            message = f"Connection failed: {outcome.error.message}"
            if outcome.hint:
                message = f"{message} Hint: {outcome.hint}"
            failed = ConnectionFailed(message)
            failed.extra = {"errorKind": outcome.error.kind, "hint": outcome.hint}
            raise failed
        if tunnel is not None and tunnel.host_key_fingerprint is None and outcome.ssh_host_key:
            return replace(tunnel, host_key_fingerprint=outcome.ssh_host_key)
        return tunnel

    async def _try(self, reach: Reach, tunnel: SshTunnel | None) -> TestOutcome:
        target = EngineTarget(
            host=reach.host,
            port=reach.port,
            username=reach.username,
            password=reach.password,
            tls=reach.tls,
            db=reach.db,
            tls_ca_file=self._live.tls_ca_file,
            tls_ca_cert=reach.tls_ca_cert,
            tls_cert=reach.tls_cert,
            tls_key=reach.tls_key,
            tls_insecure=reach.tls_insecure,
        )
        forward = None
        if tunnel is not None:
            forward = self._live.tunnels.forward(reach.host, reach.port, tunnel)
            target = replace(target, via=forward)
        client = self._live.new_client(target)
        started = time.perf_counter()
        try:
            identity = await detect(client, forced_type=forced_engine(reach.db_type))
            return TestOutcome(identity, None, _elapsed_ms(started), ssh_host_key=_seen(forward))
        except EngineError as exc:
            hint = hint_for(exc, target=target)
            return TestOutcome(None, exc, _elapsed_ms(started), hint, ssh_host_key=_seen(forward))
        finally:
            await client.close()
            if forward is not None:
                await forward.close()

    def _changed(
        self, current: Connection, body: ConnectionUpdate
    ) -> tuple[Reach, SshTunnel | None]:
        """How `body` would leave a stored connection's reach and tunnel, what it leaves
        out (secrets included) kept from storage."""
        _require_readable(current, body.model_fields_set)
        tunnel = current.ssh_tunnel
        if "ssh_tunnel" in body.model_fields_set:
            tunnel = self._tunnel(body.ssh_tunnel, base=current.ssh_tunnel)
        return merge_reach(body, base=current), tunnel

    def _tunnel(self, body: SshTunnelIn | None, *, base: SshTunnel | None) -> SshTunnel | None:
        return merge_tunnel(body, base=base, key_dir=self._settings.SVC_SSH_KEY_DIR)


def _require_readable(current: Connection, changed: set[str]) -> None:
    """A stored secret this ENCRYPTION_KEY cannot decrypt must come with the change: a
    connection is never tried, nor saved, without it."""
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
    if "tlsKey" in current.unreadable and "tls_key" not in changed:
        raise Conflict(
            "The stored TLS client key cannot be decrypted with this ENCRYPTION_KEY; "
            "send tlsKey with the change",
            field="tlsKey",
        )


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


def _pin(tunnel: SshTunnel | None) -> str | None:
    return None if tunnel is None else tunnel.host_key_fingerprint


def _seen(forward: "SshForward | None") -> str | None:
    """The host key a test's tunnel was shown (pinned in memory by then), if it got one."""
    return None if forward is None else forward.pinned_fingerprint


def _address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _read(path: Path | None) -> str | None:
    # Settings checked the file at startup (config.py); it is read when the default is made.
    return None if path is None else path.expanduser().read_text(encoding="utf-8")


def _now_ms() -> int:
    return int(time.time() * 1000)


def _elapsed_ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 2)
