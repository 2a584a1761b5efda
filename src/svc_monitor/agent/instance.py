"""The agent's connections to its instance: one per session of the service, each with the
agent's own credentials, the commands of a request pipelined and their replies read back
whole (docs/features/agent.md#how-commands-travel)."""

import asyncio
import ssl
from collections.abc import Callable
from dataclasses import dataclass, field

from svc_monitor.agent.policy import rule
from svc_monitor.engine.agent_wire import error_reply, pack_command, reply_end
from svc_monitor.engine.dial import open_stream
from svc_monitor.engine.tls import client_context

CLIENT_NAME = b"svc-monitor-agent"
_READ = 256 * 1024


class InstanceError(Exception):
    """The instance could not be reached or refused the agent's login; never holds the
    password."""


@dataclass(frozen=True, slots=True)
class Target:
    host: str
    port: int
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    tls: bool = False
    tls_ca_file: str | None = None
    db: int = 0
    connect_timeout_s: float = 5.0
    command_timeout_s: float = 30.0

    @property
    def address(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"

    def context(self) -> ssl.SSLContext | None:
        return client_context(ca_file=self.tls_ca_file) if self.tls else None


class InstanceConnection:
    """One connection to the instance, used by one session at a time."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, target: Target):
        self._reader = reader
        self._writer = writer
        self._target = target
        self._buffer = bytearray()

    @classmethod
    async def open(cls, target: Target) -> "InstanceConnection":
        try:
            reader, writer = await open_stream(
                target.host,
                target.port,
                via=None,
                tls=target.context(),
                timeout_s=target.connect_timeout_s,
            )
        except (OSError, TimeoutError, ssl.SSLError) as exc:
            raise InstanceError(f"cannot reach {target.address}: {exc}") from None
        connection = cls(reader, writer, target)
        hello = [[b"CLIENT", b"SETNAME", CLIENT_NAME]]
        if target.password:
            auth = [b"AUTH"]
            if target.username:
                auth.append(target.username.encode())
            hello.insert(0, [*auth, target.password.encode()])
        if target.db:
            hello.append([b"SELECT", str(target.db).encode()])
        try:
            replies = await connection._exchange(
                b"".join(pack_command(c) for c in hello), len(hello)
            )
        except BaseException:
            connection.close()
            raise
        for command, reply in zip(hello, replies, strict=True):
            if reply.startswith(b"-"):
                connection.close()
                what = command[0].decode()
                text = reply[1:].strip().decode("utf-8", "replace")[:200]
                raise InstanceError(f"{target.address} refused {what}: {text}")
        return connection

    async def run(self, commands: list[list[bytes]], on_refused: Callable[[str], None]) -> bytes:
        """The replies to `commands`, in order: refused ones answered here, the rest sent
        to the instance in one write."""
        outgoing: list[bytes] = []
        slots: list[bytes | None] = []  # None: the instance's next reply goes here
        for words in commands:
            ruling = rule(words)
            if ruling.run:
                outgoing.append(pack_command(words))
                slots.append(None)
            elif ruling.local_reply is not None:
                slots.append(ruling.local_reply)
            else:
                on_refused(ruling.name)
                slots.append(error_reply(ruling.reason or "NOPERM refused"))
        replies = iter(await self._exchange(b"".join(outgoing), len(outgoing)) if outgoing else [])
        return b"".join(slot if slot is not None else next(replies) for slot in slots)

    async def _exchange(self, payload: bytes, count: int) -> list[bytes]:
        self._writer.write(payload)
        replies: list[bytes] = []
        async with asyncio.timeout(self._target.command_timeout_s):
            await self._writer.drain()
            buffer = self._buffer
            start = 0
            while len(replies) < count:
                end = reply_end(buffer, start) if start < len(buffer) else -1
                if end >= 0:
                    replies.append(bytes(buffer[start:end]))
                    start = end
                    continue
                chunk = await self._reader.read(_READ)
                if not chunk:
                    raise InstanceError(f"{self._target.address} closed the connection")
                buffer += chunk
            del buffer[:start]
        return replies

    def close(self) -> None:
        self._writer.close()


# What names the other nodes of the instance's deployment (nodes_in reads the replies).
NODE_QUERIES = [[b"CLUSTER", b"NODES"], [b"INFO", b"replication"]]


async def reported_nodes(target: Target) -> set[str]:
    """host:port of every other node the instance names (nodes_in); empty when it cannot be
    read."""
    try:
        connection = await InstanceConnection.open(target)
    except (InstanceError, TimeoutError):
        return set()
    try:
        reply = await connection.run(NODE_QUERIES, lambda _: None)
    except (InstanceError, TimeoutError, OSError):
        return set()
    finally:
        connection.close()
    return nodes_in(reply.decode("utf-8", "replace"), target)


def nodes_in(text: str, target: Target) -> set[str]:
    """The nodes of its cluster (CLUSTER NODES lines), its replicas and its primary (INFO
    replication), `target` itself left out."""
    nodes: set[str] = set()
    for line in text.splitlines():
        words = line.split()
        if len(words) >= 8 and "@" in words[1]:  # a CLUSTER NODES line
            address = words[1].split("@", 1)[0]
            if not address.startswith(":"):  # a node that has not learnt its address
                nodes.add(address)
        elif line.startswith("slave") and "ip=" in line:
            fields = dict(p.split("=", 1) for p in line.split(":", 1)[1].split(",") if "=" in p)
            if "ip" in fields and "port" in fields:
                nodes.add(_address(fields["ip"], fields["port"]))
    primary = dict(line.split(":", 1) for line in text.splitlines() if line.startswith("master_"))
    if "master_host" in primary and "master_port" in primary:
        nodes.add(_address(primary["master_host"].strip(), primary["master_port"].strip()))
    nodes.discard(target.address)
    return nodes


def _address(host: str, port: str) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
