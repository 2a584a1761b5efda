"""Opening the socket to an instance: where to dial, and TLS as a step of its own.

The address dialled can differ from the instance's host: an SSH tunnel (a `Dialer`) hands
out 127.0.0.1 and a local forwarded port, while TLS still sends the real host name (SNI)
and verifies the certificate against it (docs/features/connections.md#ssh-tunnels).

TLS runs after the TCP connect rather than inside it, so a handshake that gets no answer
is told apart from a host that does not answer at all: Redis 7.0 on a plain port reads a
ClientHello as the start of an inline command and waits for its end, so a TLS client there
sees nothing but a timeout (tried against Debian's redis-server 7.0.15).
"""

import asyncio
import socket
import ssl
from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from valkey._parsers.base import BaseParser
from valkey.asyncio.connection import Connection
from valkey.exceptions import ConnectionError as ValkeyConnectionError, InvalidResponse

from svc_monitor.engine.errors import TlsHandshakeTimeout

# asyncio's own default, which valkey-py keeps too.
STREAM_LIMIT = 2**16


class Dialer(Protocol):
    """Where to open the TCP connection to an instance instead of its own address."""

    async def address(self) -> tuple[str, int]:
        """The host and port to dial now (an SSH tunnel's local end, say)."""
        ...


@runtime_checkable
class ChannelDialer(Protocol):
    """A way to an instance that is not a TCP address: an agent's link hands out one end of
    a socket pair per connection, and carries what is written to it
    (engine/agent_link.py). No port is opened, so nothing else on the host can use it."""

    async def channel(self) -> socket.socket:
        """A connected socket whose peer speaks RESP as the instance would."""
        ...

    def toward(self, host: str, port: int) -> "ChannelDialer":
        """The same way, to another node of the instance's deployment (a cluster node)."""
        ...


# What EngineTarget.via may hold.
Via = Dialer | ChannelDialer


async def open_stream(
    host: str,
    port: int,
    *,
    via: Via | None,
    tls: ssl.SSLContext | None,
    timeout_s: float | None,
    limit: int = STREAM_LIMIT,
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """Connect to `host:port` (or to where `via` says), then run the TLS handshake for
    `host`; TCP connect and handshake share `timeout_s`. A handshake past it raises
    TlsHandshakeTimeout; everything else is raised as the socket or ssl module raised it."""
    if isinstance(via, ChannelDialer):
        async with asyncio.timeout(timeout_s):
            return await asyncio.open_connection(sock=await via.channel(), limit=limit)
    dial_host, dial_port = await via.address() if via is not None else (host, port)
    writer: asyncio.StreamWriter | None = None
    handshaking = False
    try:
        async with asyncio.timeout(timeout_s):
            reader, writer = await asyncio.open_connection(dial_host, dial_port, limit=limit)
            sock = writer.transport.get_extra_info("socket")
            if sock is not None:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if tls is not None:
                handshaking = True
                await writer.start_tls(tls, server_hostname=host)
    except BaseException as exc:
        if writer is not None:
            writer.close()
        if handshaking and isinstance(exc, TimeoutError) and timeout_s is not None:
            raise TlsHandshakeTimeout(timeout_s) from None
        raise
    return reader, writer


class TargetConnection(Connection):
    """valkey-py's TCP connection, dialled by `open_stream`: through `via` when set, with a
    prebuilt SSL context shared by the pool (one per client, not one per socket)."""

    def __init__(
        self,
        *,
        via: Via | None = None,
        tls_context: ssl.SSLContext | None = None,
        **kwargs: Any,
    ) -> None:
        self.via = via
        self.tls_context = tls_context
        super().__init__(**kwargs)

    def _connection_arguments(self) -> Mapping[str, Any]:
        # Only what valkey-py itself might print or reuse; `via` stays out of it.
        return {"host": self.host, "port": self.port}

    @property
    def closed_by_peer(self) -> bool:
        """The server closed (or reset) the socket while we were not reading from it: the
        event loop has already seen it, so this asks nothing of the socket."""
        reader = self._reader
        return reader is not None and (reader.at_eof() or reader.exception() is not None)

    async def send_bytes(self, command: bytes) -> None:
        """Send a packed command under the caller's deadline. valkey-py's own send wraps
        each write in asyncio.wait_for, a task per command; this is one write."""
        writer = self._writer
        if writer is None:
            raise ConnectionError("not connected")
        try:
            writer.write(command)
            await writer.drain()
        except BaseException:
            await self.disconnect(nowait=True)
            raise

    async def ask(self, command: bytes) -> bytes:
        """Send a packed command whose reply is a bulk or simple string (INFO, PING) and
        read that reply straight off the stream, under the caller's deadline.

        valkey-py's read puts a timeout of its own around every reply and goes through its
        general parser; INFO, read every second from every server, needs neither. An error
        reply raises the exception valkey-py would raise for it; anything but a string is
        a protocol error. Any failure leaves the connection for the caller to close.
        """
        reader, writer = self._reader, self._writer
        if reader is None or writer is None:
            raise ValkeyConnectionError("not connected")
        writer.write(command)
        try:
            line = await reader.readuntil(b"\r\n")
            kind = line[:1]
            if kind == b"$":
                length = int(line[1:-2])
                if length < 0:
                    return b""
                return (await reader.readexactly(length + 2))[:-2]
        except asyncio.IncompleteReadError:
            raise ValkeyConnectionError("Connection closed by server.") from None
        if kind == b"+":
            return line[1:-2]
        if kind == b"-":
            raise BaseParser.parse_error(line[1:-2].decode("utf-8", "replace"))  # type: ignore[no-untyped-call]
        raise InvalidResponse(f"Protocol Error: {line[:64]!r}")

    async def _connect(self) -> None:
        self._reader, self._writer = await open_stream(
            self.host,
            self.port,
            via=self.via,
            tls=self.tls_context,
            timeout_s=self.socket_connect_timeout,
        )
