"""The service's end of an agent's link: engine clients talk RESP to it as to an instance
(docs/features/agent.md#how-commands-travel).

Every connection an engine client opens to an agent connection is a session: one end of a
socket pair goes to valkey-py, and what it writes is sent to the agent as COMMANDS frames;
the agent's REPLIES are written back in order. So every poll, live view, detector and the
CLI work through an agent without knowing it, and no port is opened on the service's host.

A command is sent at most once. When a link drops, every session of it is closed: the
commands in flight fail as on a dropped TCP connection (the poll counts a failed pass,
health shows the instance down) and are never sent again, so a reconnecting agent cannot
run one twice. The next poll opens a new session over the new link.
"""

import asyncio
import contextlib
import itertools
import logging
import socket
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from svc_monitor.engine.agent_wire import Frame, Kind, encode
from svc_monitor.engine.errors import AgentNotLinked

logger = logging.getLogger(__name__)

# What one read from a session's socket may hand the link at once; valkey-py's pipelines
# of a poll pass are far smaller.
_READ_CHUNK = 256 * 1024
# Sessions one link may hold: each engine client opens at most five (engine/client.py), and
# a cluster connection one client per node.
MAX_SESSIONS = 4096

Send = Callable[[bytes], Awaitable[None]]


@dataclass(slots=True)
class AgentHello:
    """What the agent said of itself and its instance when it linked."""

    version: str
    engine: str | None = None  # "valkey" or "redis", as the instance's INFO says
    engine_version: str | None = None
    tls: bool = False
    cluster: bool = False
    nodes: list[str] = field(default_factory=list)  # host:port of each node it reaches


@dataclass(slots=True)
class _Session:
    number: int
    writer: asyncio.StreamWriter
    pump: "asyncio.Task[None] | None" = None


class AgentLink:
    """One live link. `deliver` is fed the frames the agent sends; `send` carries ours."""

    def __init__(self, send: Send, hello: AgentHello) -> None:
        self.hello = hello
        self.linked_at_ms = int(time.time() * 1000)
        self.rtt_ms: float | None = None
        self.refused = 0  # commands the agent refused over this link
        self.last_refused: str | None = None
        self._send = send
        self._sessions: dict[int, _Session] = {}
        self._numbers = itertools.count(1)
        self._requests = itertools.count(1)
        self._closed = False

    @property
    def open(self) -> bool:
        return not self._closed

    @property
    def sessions(self) -> int:
        return len(self._sessions)

    async def channel(self, node: str | None = None) -> socket.socket:
        """A new session (to `node`, host:port, instead of the agent's instance when
        given); its socket is valkey-py's to use."""
        if self._closed:
            raise AgentNotLinked("the agent's link closed")
        if len(self._sessions) >= MAX_SESSIONS:
            raise AgentNotLinked(f"the agent's link holds {MAX_SESSIONS} sessions already")
        ours, theirs = socket.socketpair()
        ours.setblocking(False)
        reader, writer = await asyncio.open_connection(sock=ours, limit=_READ_CHUNK)
        session = _Session(next(self._numbers), writer)
        self._sessions[session.number] = session
        if node is not None:  # before any command of the session can be sent
            await self._send(encode(Kind.OPEN, session.number, 0, node.encode()))
        session.pump = asyncio.get_running_loop().create_task(self._pump(session, reader))
        return theirs

    async def _pump(self, session: _Session, reader: asyncio.StreamReader) -> None:
        """Commands written to the session, sent as they come (the agent splits them)."""
        try:
            while True:
                chunk = await reader.read(_READ_CHUNK)
                if not chunk:
                    break
                await self._send(encode(Kind.COMMANDS, session.number, next(self._requests), chunk))
        except Exception as exc:  # the socket or the link went: the session ends either way
            logger.debug("agent session %d ended: %s", session.number, exc)
        finally:
            if self._sessions.pop(session.number, None) is not None and not self._closed:
                # The engine client closed it: the agent closes its instance connection.
                with contextlib.suppress(Exception):  # the link may be going too
                    await self._send(encode(Kind.CLOSE, session.number, 0, b"closed"))
            session.writer.close()

    def deliver(self, frame: Frame) -> None:
        """A frame from the agent: replies written to their session, a close closes it."""
        session = self._sessions.get(frame.session)
        if session is None:
            return  # a session the engine client already closed
        if frame.kind is Kind.REPLIES:
            session.writer.write(frame.payload)
        elif frame.kind is Kind.CLOSE:
            reason = frame.payload.decode("utf-8", "replace")[:200]
            logger.info("agent closed session %d: %s", frame.session, reason)
            self._end(session)

    def note_refused(self, command: str) -> None:
        self.refused += 1
        self.last_refused = command

    def close(self) -> None:
        """The link is gone: every session ends as a dropped connection would."""
        self._closed = True
        for session in list(self._sessions.values()):
            self._end(session)

    def _end(self, session: _Session) -> None:
        self._sessions.pop(session.number, None)
        session.writer.close()
        if session.pump is not None:
            session.pump.cancel()


class AgentLinks:
    """The live link of each agent connection, by connection id."""

    def __init__(self) -> None:
        self._links: dict[str, AgentLink] = {}

    def dialer(self, connection_id: str) -> "AgentDialer":
        return AgentDialer(connection_id, self)

    def get(self, connection_id: str) -> AgentLink | None:
        link = self._links.get(connection_id)
        return link if link is not None and link.open else None

    def attach(self, connection_id: str, link: AgentLink) -> AgentLink | None:
        """Make `link` the connection's; the one it replaces (an agent that reconnected
        before the old link timed out) is returned for the caller to close."""
        previous = self._links.get(connection_id)
        self._links[connection_id] = link
        return previous if previous is not link else None

    def detach(self, connection_id: str, link: AgentLink) -> None:
        link.close()
        if self._links.get(connection_id) is link:
            del self._links[connection_id]


@dataclass(frozen=True, slots=True)
class AgentDialer:
    """engine/dial.py's ChannelDialer for one agent connection: equal while it names the
    same connection, so the connection's engine client is kept across reconnects."""

    connection_id: str
    links: AgentLinks = field(compare=False, repr=False)
    node: str | None = None  # host:port of another node the agent's instance reports

    async def channel(self) -> socket.socket:
        link = self.links.get(self.connection_id)
        if link is None:
            raise AgentNotLinked(
                "the agent of this connection is not linked to svc-monitor (not started, "
                "stopped, cut off, or its token was revoked)"
            )
        return await link.channel(self.node)

    def toward(self, host: str, port: int) -> "AgentDialer":
        address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        return AgentDialer(self.connection_id, self.links, address)
