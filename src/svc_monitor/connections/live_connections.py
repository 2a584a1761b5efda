"""Open engine clients per connection and what was last seen of each engine.

A client is made on first use and replaced when its connection is edited, so an
edit never talks to the old address. Status is what the last check saw; the
health endpoint and (later) the poll loops refresh it.
"""

import asyncio
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path

from svc_monitor.connections.models import Connection, EngineSnapshot, PushStatus, forced_engine
from svc_monitor.connections.tunnels import Tunnels
from svc_monitor.engine.agent_link import AgentLinks
from svc_monitor.engine.capabilities import EngineIdentity, detect
from svc_monitor.engine.client import EngineClient, EngineTarget
from svc_monitor.engine.errors import EngineError
from svc_monitor.engine.ledger import CommandLedger
from svc_monitor.kit.records import from_attributes

logger = logging.getLogger(__name__)


@dataclass(slots=True)
class _Live:
    target: EngineTarget
    client: EngineClient
    # The (frozen) connection the target was built from: asked again with the very same
    # one and no tunnel, the target cannot have changed (every poll pass asks).
    connection: Connection | None = None
    snapshot: EngineSnapshot | None = None
    detecting: asyncio.Lock = field(default_factory=asyncio.Lock)


class LiveConnections:
    """Engine clients keyed by connection id."""

    def __init__(
        self,
        *,
        connect_timeout_s: float,
        command_timeout_s: float,
        tls_ca_file: str | None,
        ssh_key_dir: Path | None = None,
    ) -> None:
        self._connect_timeout_s = connect_timeout_s
        self._command_timeout_s = command_timeout_s
        self.tls_ca_file = tls_ca_file
        # The SSH login shares the client's connect timeout: it happens inside the client's
        # connect, so a longer one would be cut short by the client's own deadline.
        self.tunnels = Tunnels(connect_timeout_s=connect_timeout_s, key_dir=ssh_key_dir)
        # The links of agents that dialled in: an agent connection's client talks over its own.
        self.agent_links = AgentLinks()
        self._live: dict[str, _Live] = {}
        # Outlive client replacement: an edit must not reset what we sent a server.
        self._ledgers: dict[str, CommandLedger] = {}
        self._closing: set[asyncio.Task[None]] = set()
        self._pushed: dict[str, PushStatus] = {}
        # Connections already warned about for tlsInsecure (once per connection, not per client).
        self._insecure_warned: set[str] = set()

    def target(self, connection: Connection) -> EngineTarget:
        if connection.via_agent:
            # The agent logs in and chooses TLS and the database itself: none of it crosses.
            return EngineTarget(
                host=connection.host, port=0, via=self.agent_links.dialer(connection.id)
            )
        return from_attributes(
            EngineTarget,
            connection,
            tls_ca_file=self.tls_ca_file,
            via=self.tunnels.dialer(connection),
        )

    def client(self, connection: Connection) -> EngineClient:
        live = self._live.get(connection.id)
        if live is not None and live.connection is connection and connection.ssh_tunnel is None:
            return live.client
        target = self.target(connection)
        if live is None or live.target != target:
            closing = self._close_later(live.client) if live is not None else None
            self.tunnels.retire(connection.id, after=closing)
            self._warn_if_insecure(connection.id, target)
            ledger = self._ledgers.setdefault(connection.id, CommandLedger())
            live = _Live(target, self.new_client(target, ledger=ledger))
            self._live[connection.id] = live
        live.connection = connection
        return live.client

    def _warn_if_insecure(self, connection_id: str, target: EngineTarget) -> None:
        if not (target.tls and target.tls_insecure):
            self._insecure_warned.discard(connection_id)  # warn again if it comes back
        elif connection_id not in self._insecure_warned:
            self._insecure_warned.add(connection_id)
            logger.warning(
                "connection %s (%s) does not verify the server's TLS certificate or host "
                "name (tlsInsecure): anyone on the path can pose as the server",
                connection_id,
                target.address,
            )

    def new_client(
        self, target: EngineTarget, *, ledger: CommandLedger | None = None
    ) -> EngineClient:
        return EngineClient(
            target,
            connect_timeout_s=self._connect_timeout_s,
            command_timeout_s=self._command_timeout_s,
            ledger=ledger,
        )

    def ledger(self, connection_id: str) -> CommandLedger:
        return self._ledgers.setdefault(connection_id, CommandLedger())

    def set_push_status(self, connection_id: str, status: PushStatus) -> None:
        self._pushed[connection_id] = status

    def push_status(self, connection_id: str) -> PushStatus | None:
        return self._pushed.get(connection_id)

    def snapshot(self, connection_id: str) -> EngineSnapshot | None:
        pushed = self._pushed.get(connection_id)
        if pushed is not None:
            return pushed.snapshot()
        live = self._live.get(connection_id)
        return None if live is None else live.snapshot

    async def check(self, connection: Connection) -> EngineSnapshot:
        """PING, and detect the engine if it has not been detected since it last answered."""
        client = self.client(connection)
        live = self._live[connection.id]
        previous = live.snapshot
        now_ms = int(time.time() * 1000)
        try:
            await client.ping()
            identity = previous.identity if previous and previous.connected else None
            if identity is None:
                identity = await self._detect_once(connection, live)
            snapshot = EngineSnapshot(True, identity, None, now_ms)
        except EngineError as exc:
            snapshot = EngineSnapshot(False, None, exc, now_ms)
        if previous is None or previous.connected != snapshot.connected:
            # Once per transition, not on every failed check.
            if snapshot.connected:
                logger.info("connection %s is up", connection.id)
            else:
                logger.warning("connection %s is down: %s", connection.id, snapshot.error)
        # The client may have been replaced by an edit while we waited; keep the newer state.
        if self._live.get(connection.id) is live:
            live.snapshot = snapshot
        return snapshot

    async def _detect_once(self, connection: Connection, live: _Live) -> EngineIdentity:
        """Detect, unless a check that waited meanwhile already has. Start-up, /health and the
        INFO poll check a new connection at once, and every detection sends the capability
        probes again (a NOPERM user's refusals each land in the ACL log we audit)."""
        async with live.detecting:
            seen = live.snapshot  # the holder set it before this task could run again
            if seen is not None and seen.connected and seen.identity is not None:
                return seen.identity
            return await detect(live.client, forced_type=forced_engine(connection.db_type))

    def mark_down(self, connection_id: str, error: EngineError) -> None:
        """A poll saw the engine fail: the next check detects it afresh."""
        live = self._live.get(connection_id)
        if live is not None:
            live.snapshot = EngineSnapshot(False, None, error, int(time.time() * 1000))

    async def drop_tunnel(self, connection_id: str) -> None:
        """Close the connection's client, then its SSH forward (in that order: the forward's
        accepted sockets close cleanly once their client has); the next use opens both
        anew, trusting whatever pin the connection now has."""
        live = self._live.pop(connection_id, None)
        if live is not None:
            await live.client.close()
        await self.tunnels.drop(connection_id)

    async def forget(self, connection_id: str) -> None:
        self._pushed.pop(connection_id, None)
        self._insecure_warned.discard(connection_id)
        live = self._live.pop(connection_id, None)
        self._ledgers.pop(connection_id, None)
        if live is not None:
            await live.client.close()
        await self.tunnels.drop(connection_id)

    async def close(self) -> None:
        clients = [live.client for live in self._live.values()]
        self._live.clear()
        await asyncio.gather(*(c.close() for c in clients), *self._closing, return_exceptions=True)
        await self.tunnels.close()

    def _close_later(self, client: EngineClient) -> asyncio.Task[None]:
        # Closed in the background so an edit answers at once; the set keeps the task alive.
        task = asyncio.get_running_loop().create_task(client.close())
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)
        return task
