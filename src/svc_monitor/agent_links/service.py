"""Agent tokens and the live links of agents (docs/features/agent.md).

An admin makes a token for a new agent connection; the token is shown once and only its
SHA-256 is kept. The agent dials /agent/ws with it and, after its hello, its link carries
every command the service sends that connection's instance (engine/agent_link.py).
Revoking a token closes its link at once (close code 4003) and refuses it from then on.
"""

import asyncio
import hashlib
import logging
import secrets
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from svc_monitor.agent_links.models import AgentToken
from svc_monitor.agent_links.store import AgentTokenStore
from svc_monitor.connections.service import ConnectionService
from svc_monitor.engine.agent_link import AgentHello, AgentLink
from svc_monitor.errors import NotFound
from svc_monitor.events import ConnectionsChanged, EventBus

logger = logging.getLogger(__name__)

TOKEN_PREFIX = "svc_agent_"
# A link without an answer to a ping for this long is closed (code 4000).
HEARTBEAT_S = 5.0
PONG_TIMEOUT_S = 10.0
REVOKED = 4003
CONNECTION_DELETED = 4004

Close = Callable[[int, str], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class LinkView:
    """One agent connection as the agents page shows it."""

    token: AgentToken
    link: AgentLink | None


def token_hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


class AgentLinkService:
    def __init__(
        self, store: AgentTokenStore, connections: ConnectionService, bus: EventBus
    ) -> None:
        self._store = store
        self._connections = connections
        self._bus = bus
        self._closers: dict[str, tuple[AgentLink, Close]] = {}  # by connection id

    async def create(self, name: str) -> tuple[AgentToken, str]:
        """A new token and the agent connection it links; the secret, to show once."""
        connection = await self._connections.create_agent(name)
        secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
        token = AgentToken(
            id=str(uuid.uuid4()),
            name=name,
            connection_id=connection.id,
            created_at=_now_ms(),
            token_hash=token_hash(secret),
        )
        await self._store.insert(token)
        logger.info("agent token %s made for connection %s", token.id, connection.id)
        return token, secret

    async def tokens(self) -> list[AgentToken]:
        return await self._store.list()

    async def get(self, token_id: str) -> AgentToken:
        token = await self._store.get(token_id)
        if token is None:
            raise NotFound(f"Agent token '{token_id}' not found", field="id")
        return token

    async def revoke(self, token_id: str) -> AgentToken:
        """Refuse the token from now on and close its link, if one is up."""
        token = await self.get(token_id)
        if not token.revoked:
            await self._store.revoke(token_id, _now_ms())
            logger.info("agent token %s revoked", token_id)
        held = self._closers.get(token.connection_id)
        if held is not None:
            link, close = held
            link.close()
            await close(REVOKED, "the agent token was revoked")
        return await self.get(token_id)

    async def authenticate(self, secret: str) -> AgentToken | None:
        """The token this secret is, unless it is unknown or revoked."""
        if not secret.startswith(TOKEN_PREFIX) or len(secret) > 200:
            return None
        token = await self._store.by_hash(token_hash(secret))
        if token is None or token.revoked:
            return None
        if await self._connections.find(token.connection_id) is None:
            return None  # its connection was deleted: the token links nothing
        return token

    async def watch(self) -> None:
        """Close the link of a connection that is deleted (4004) and revoke its token: an
        agent must not keep a way in for a connection nobody watches any more."""
        changes = self._bus.subscribe("agent-links", maxsize=1000, kinds=(ConnectionsChanged,))
        try:
            async for event in changes:
                assert isinstance(event, ConnectionsChanged)
                held = self._closers.get(event.connection_id)
                if held is None or await self._connections.find(event.connection_id):
                    continue
                for token in await self._store.list():
                    if token.connection_id == event.connection_id and not token.revoked:
                        await self._store.revoke(token.id, _now_ms())
                link, close = held
                link.close()
                await close(CONNECTION_DELETED, "the connection of this agent was deleted")
        finally:
            self._bus.unsubscribe(changes)

    async def linked(
        self, token: AgentToken, hello: AgentHello, link: AgentLink, close: Close
    ) -> None:
        """The agent said hello: its link now carries the connection's commands. A link
        it replaces (the agent reconnected before the old one timed out) is closed."""
        await self._connections.get(token.connection_id)  # NotFound: the connection was deleted
        replaced = self._connections.agent_links.attach(token.connection_id, link)
        previous = self._closers.get(token.connection_id)
        self._closers[token.connection_id] = (link, close)
        if replaced is not None:
            replaced.close()
            if previous is not None and previous[0] is replaced:
                await previous[1](4000, "replaced by a newer link of the same agent")
        await self._store.used(token.id, _now_ms())
        logger.info(
            "agent %s linked for connection %s (%s %s)",
            hello.version,
            token.connection_id,
            hello.engine or "instance unreachable",
            hello.engine_version or "",
        )

    def unlinked(self, token: AgentToken, link: AgentLink) -> None:
        self._connections.agent_links.detach(token.connection_id, link)
        held = self._closers.get(token.connection_id)
        if held is not None and held[0] is link:
            del self._closers[token.connection_id]
            logger.warning("agent link of connection %s dropped", token.connection_id)

    async def views(self) -> list[LinkView]:
        links = self._connections.agent_links
        return [LinkView(t, links.get(t.connection_id)) for t in await self._store.list()]

    async def heartbeat(
        self,
        link: AgentLink,
        ping: Callable[[float], Awaitable[None]],
        close: Close,
        pongs: "asyncio.Queue[float]",
    ) -> None:
        """Ping every HEARTBEAT_S; a pong carries the round trip time; none in time closes
        the link (code 4000), so a link that went silent shows the instance down."""
        while link.open:
            sent = time.perf_counter()
            await ping(sent)
            try:
                async with asyncio.timeout(PONG_TIMEOUT_S):
                    while True:
                        echoed = await pongs.get()
                        if echoed == sent:
                            break
            except TimeoutError:
                logger.warning("agent link sent no pong within %g s: closing it", PONG_TIMEOUT_S)
                link.close()
                await close(4000, "no pong")
                return
            link.rtt_ms = (time.perf_counter() - sent) * 1000
            await asyncio.sleep(HEARTBEAT_S)


def _now_ms() -> int:
    return int(time.time() * 1000)
