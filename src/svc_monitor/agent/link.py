"""The agent's link to the service: dial, say hello, run what arrives, keep it up
(docs/features/agent.md#the-link).

- One WebSocket to wss://<service>/agent/ws, the token in the Authorization header, the
  service's certificate verified (SVC_CA_BUNDLE, else the system's CAs).
- The service pings every few seconds; the agent answers at once and, when nothing at all
  has arrived for three heartbeats, drops the link and dials again.
- Reconnects back off with jitter (0.5 s doubling to 30 s; a refused token waits 30 s);
  a link that stayed up a minute starts the backoff afresh.
- Each session's frames are run in order on its own connection to the instance; sessions
  run side by side. A link that drops ends every session: nothing is replayed.
"""

import asyncio
import contextlib
import json
import logging
import random
import ssl
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus, InvalidURI, WebSocketException

from svc_monitor.agent.instance import (
    NODE_QUERIES,
    InstanceConnection,
    InstanceError,
    Target,
    nodes_in,
    reported_nodes,
)
from svc_monitor.engine.agent_wire import (
    HEADER,
    MAX_PAYLOAD,
    Frame,
    Kind,
    WireError,
    decode,
    encode,
    split_commands,
)

logger = logging.getLogger("svc_monitor.agent")

HELLO_TIMEOUT_S = 10.0
DEFAULT_HEARTBEAT_S = 5.0
REPLY_PIECE = 512 * 1024
# How often an unknown node makes the agent read its instance's nodes again.
NODES_FRESH_S = 5.0
# A session's bytes not yet a whole command: a peer past this is not our service.
MAX_PENDING = MAX_PAYLOAD


@dataclass(slots=True)
class Backoff:
    first_s: float = 0.5
    most_s: float = 30.0
    _next_s: float = field(default=0.5, init=False)

    def reset(self) -> None:
        self._next_s = self.first_s

    def delay(self) -> float:
        """The next wait: full jitter over an exponentially growing ceiling."""
        ceiling = self._next_s
        self._next_s = min(self.most_s, self._next_s * 2)
        return random.uniform(ceiling / 2, ceiling)


class _Session:
    """One session of the service: its frames run in order on one instance connection."""

    def __init__(self, number: int, link: "Link", target: Target) -> None:
        self.number = number
        self._link = link
        self._target = target
        self._queue: asyncio.Queue[Frame | None] = asyncio.Queue()
        self._buffer = bytearray()
        self._connection: InstanceConnection | None = None
        self.task = asyncio.get_running_loop().create_task(self._run())

    def feed(self, frame: Frame | None) -> None:
        self._queue.put_nowait(frame)

    async def _run(self) -> None:
        try:
            while (frame := await self._queue.get()) is not None:
                self._buffer += frame.payload
                if len(self._buffer) > MAX_PENDING:
                    raise WireError("more than 64 MiB of commands pending")
                commands, used = split_commands(self._buffer)
                if not commands:
                    continue
                del self._buffer[:used]
                if self._connection is None:
                    self._connection = await InstanceConnection.open(self._target)
                replies = await self._connection.run(commands, self._link.refused)
                # In pieces: the service takes WebSocket messages of up to 1 MiB, and it
                # only writes the bytes on, so a reply may span frames.
                for start in range(0, len(replies), REPLY_PIECE):
                    piece = replies[start : start + REPLY_PIECE]
                    await self._link.send(encode(Kind.REPLIES, self.number, frame.request, piece))
        except (InstanceError, WireError, TimeoutError, OSError) as exc:
            reason = str(exc) if not isinstance(exc, TimeoutError) else "the instance took too long"
            logger.warning("session %d closed: %s", self.number, reason)
            await self._link.close_session(self.number, reason)
        except ConnectionClosed:
            pass
        finally:
            if self._connection is not None:
                self._connection.close()
            self._link.sessions.pop(self.number, None)


class Link:
    """One link's life: from the hello to the close."""

    def __init__(self, socket: ClientConnection, target: Target, nodes: set[str]) -> None:
        self.socket = socket
        self.target = target
        self.sessions: dict[int, _Session] = {}
        self._nodes = nodes  # host:port of the nodes the instance reports
        self._nodes_read = asyncio.get_running_loop().time()

    async def node_target(self, address: str) -> Target | None:
        """The target for a session to another node, when the instance reports it (read
        again, at most every few seconds, for a node not seen yet: a failover, a new
        replica); None for any other address, which the service may not reach through us."""
        now = asyncio.get_running_loop().time()
        if address not in self._nodes and now - self._nodes_read > NODES_FRESH_S:
            self._nodes_read = now
            self._nodes = await reported_nodes(self.target)
        if address not in self._nodes:
            return None
        host, _, port = address.rpartition(":")
        return replace(self.target, host=host.strip("[]"), port=int(port))

    async def send(self, data: bytes | str) -> None:
        await self.socket.send(data)

    async def close_session(self, number: int, reason: str) -> None:
        with contextlib.suppress(ConnectionClosed):
            await self.send(encode(Kind.CLOSE, number, 0, reason.encode()[:500]))

    def refused(self, name: str) -> None:
        logger.warning("refused %s: the agent runs read commands only", name)
        task = asyncio.get_running_loop().create_task(
            self.send(json.dumps({"type": "refused", "command": name}))
        )
        task.add_done_callback(_ignore)

    async def serve(self, heartbeat_s: float) -> None:
        """Until the link drops: pongs, and each frame handed to its session."""
        try:
            while True:
                async with asyncio.timeout(3 * heartbeat_s):
                    message = await self.socket.recv()
                if isinstance(message, str):
                    await self._control(message)
                    continue
                frame = decode(message)
                session = self.sessions.get(frame.session)
                if frame.kind is Kind.OPEN and session is None:
                    address = frame.payload.decode("utf-8", "replace")[:300]
                    target = await self.node_target(address)
                    if target is None:
                        logger.warning(
                            "refused a session to %s: not a node of %s",
                            address,
                            self.target.address,
                        )
                        await self.close_session(
                            frame.session, f"{address} is not a node {self.target.address} reports"
                        )
                        continue
                    self.sessions[frame.session] = _Session(frame.session, self, target)
                    continue
                if frame.kind is Kind.CLOSE:
                    if session is not None:
                        session.feed(None)
                    continue
                if frame.kind is not Kind.COMMANDS:
                    raise WireError(f"the service sent a {frame.kind.name} frame")
                if session is None:
                    session = self.sessions[frame.session] = _Session(
                        frame.session, self, self.target
                    )
                session.feed(frame)
        finally:
            for session in list(self.sessions.values()):
                session.task.cancel()
            await asyncio.gather(*(s.task for s in self.sessions.values()), return_exceptions=True)

    async def _control(self, text: str) -> None:
        try:
            message = json.loads(text)
        except ValueError:
            raise WireError("the service sent a text frame that is not JSON") from None
        if isinstance(message, dict) and message.get("type") == "ping":
            await self.send(json.dumps({"type": "pong", "t": message.get("t")}))


def _ignore(task: "asyncio.Task[None]") -> None:
    if not task.cancelled():
        task.exception()


async def probe(target: Target) -> dict[str, object]:
    """What the hello says of the instance: its engine, version, TLS and whether it is a
    cluster (nothing when it cannot be reached now: the service shows it down)."""
    facts: dict[str, object] = {"tls": target.tls, "address": target.address}
    try:
        connection = await InstanceConnection.open(target)
    except (InstanceError, TimeoutError) as exc:
        facts["error"] = str(exc)
        return facts
    try:
        # One round trip on one connection: the engine, cluster mode and the nodes.
        asks = [[b"INFO", b"server"], [b"INFO", b"cluster"], *NODE_QUERIES]
        reply = await connection.run(asks, lambda _: None)
    except (InstanceError, TimeoutError, OSError) as exc:
        facts["error"] = str(exc)
        return facts
    finally:
        connection.close()
    text = reply.decode("utf-8", "replace")
    fields = dict(
        line.split(":", 1) for line in text.splitlines() if ":" in line and not line.startswith("#")
    )
    valkey = "valkey_version" in fields or fields.get("server_name") == "valkey"
    facts["engine"] = "valkey" if valkey else "redis"
    facts["version"] = fields.get("valkey_version") or fields.get("redis_version")
    facts["cluster"] = fields.get("cluster_enabled", "0").strip() == "1"
    facts["nodes"] = sorted(nodes_in(text, target))
    return facts


async def run(
    url: str,
    token: Callable[[], str],
    target: Target,
    *,
    version: str,
    ca_bundle: str | None,
    connect_timeout_s: float,
    stop: asyncio.Event | None = None,
) -> None:
    """Keep the link up until `stop` is set (or for ever)."""
    backoff = Backoff()
    context: ssl.SSLContext | None = None
    if url.startswith("wss://"):
        context = ssl.create_default_context(cafile=ca_bundle)
    stop = stop or asyncio.Event()
    while not stop.is_set():
        started = asyncio.get_running_loop().time()
        wait_s: float | None = None
        try:
            async with connect(
                url,
                additional_headers={"Authorization": f"Bearer {token()}"},
                ssl=context,
                open_timeout=connect_timeout_s,
                ping_interval=None,  # the service's own pings carry the round trip time
                max_size=MAX_PAYLOAD + HEADER.size,
                compression=None,
                user_agent_header=f"svc-monitor-agent/{version}",
            ) as socket:
                await _linked(socket, target, version, stop)
        except InvalidStatus as exc:
            status = exc.response.status_code
            logger.error("svc-monitor refused the link (HTTP %d): check the agent token", status)
            if status in (401, 403):
                wait_s = 30.0
        except ConnectionClosed as exc:
            code = exc.rcvd.code if exc.rcvd is not None else None
            why = exc.rcvd.reason if exc.rcvd is not None else "no close frame"
            logger.warning("link closed (%s %s)", code, why)
            if code == 4003:  # revoked
                wait_s = 30.0
        except (OSError, TimeoutError, WebSocketException, WireError) as exc:
            logger.warning("link failed: %s", exc or type(exc).__name__)
        except InvalidURI as exc:
            logger.error("SVC_URL is not usable: %s", exc)
            raise
        if asyncio.get_running_loop().time() - started > 60:
            backoff.reset()
        delay = wait_s if wait_s is not None else backoff.delay()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=delay)


async def _linked(
    socket: ClientConnection, target: Target, version: str, stop: asyncio.Event
) -> None:
    facts = await probe(target)
    await socket.send(json.dumps({"type": "hello", "version": version, "instance": facts}))
    async with asyncio.timeout(HELLO_TIMEOUT_S):
        reply = await socket.recv()
    welcome = json.loads(reply) if isinstance(reply, str) else {}
    if welcome.get("type") != "welcome":
        raise WireError("the service did not welcome the agent")
    heartbeat_s = float(welcome.get("heartbeatS") or DEFAULT_HEARTBEAT_S)
    logger.info(
        "linked to svc-monitor as connection %s; watching %s (and the nodes it reports: %s)",
        welcome.get("connectionId"),
        target.address,
        ", ".join(str(n) for n in facts.get("nodes") or []) or "none",  # type: ignore[attr-defined]
    )
    nodes = facts.get("nodes")
    link = Link(socket, target, set(nodes) if isinstance(nodes, list) else set())
    serving = asyncio.get_running_loop().create_task(link.serve(heartbeat_s))
    stopping = asyncio.get_running_loop().create_task(stop.wait())
    try:
        done, _ = await asyncio.wait({serving, stopping}, return_when=asyncio.FIRST_COMPLETED)
        if serving in done:
            serving.result()
    finally:
        serving.cancel()
        stopping.cancel()
        await asyncio.gather(serving, stopping, return_exceptions=True)
