"""The dedicated connection a capture reads MONITOR from.

MONITOR turns a connection into a one-way stream, so a capture never borrows the pooled
client of connections/live_connections.py: it opens its own socket with the connection's address,
credentials and TLS settings (as engine/client.py's EngineClient does: the same SSL context
builder and dial rule, same timeouts, client name "svc-monitor", no CLIENT SETINFO), and
closes it when the capture ends, which the engine sees as the client leaving.

The stream is read raw rather than through valkey-py, whose reader keeps a whole reply in
memory however long it is: a `SET` of a 500 MB value is a 500 MB MONITOR line. Here at
most LINE_LIMIT bytes of a line are ever buffered; the rest is read and counted, not kept.
"""

import asyncio
import contextlib
from dataclasses import dataclass

from svc_monitor.engine.client import CLIENT_NAME, EngineTarget, tls_context
from svc_monitor.engine.dial import open_stream
from svc_monitor.engine.errors import (
    EngineAuthError,
    EngineError,
    EngineProtocolError,
    EngineResponseError,
    EngineUnreachable,
    translate,
)

# The head of a line that is kept (and the stream's buffer limit). Real lines are a few
# hundred bytes; the parser keeps 100 arguments of 1000 characters at most anyway.
LINE_LIMIT = 64 * 1024
_CRLF = b"\r\n"


@dataclass(frozen=True, slots=True)
class RawLine:
    head: bytes  # the line without "+" and CRLF; only its first LINE_LIMIT bytes when cut
    size: int  # the whole line's length
    cut: bool


class MonitorStream:
    """One connection in MONITOR mode; `open` does the handshake, `read_line` the rest."""

    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, address: str
    ) -> None:
        self._reader = reader
        self._writer = writer
        self.address = address
        # The server's id for this connection (CLIENT ID), so the capture can watch what the
        # server holds for it; None when our user may not ask.
        self.client_id: int | None = None

    @classmethod
    async def open(
        cls, target: EngineTarget, *, connect_timeout_s: float, command_timeout_s: float
    ) -> "MonitorStream":
        """Connect, authenticate, name the client and send MONITOR; EngineError if any step
        fails, with the server's own words (NOPERM, unknown command, WRONGPASS ...)."""
        deadline = connect_timeout_s + command_timeout_s
        try:
            # The whole deadline bounds a tunnel's `via.address()`; open_stream's own
            # connect timeout bounds the TCP connect and the TLS handshake.
            async with asyncio.timeout(deadline):
                reader, writer = await open_stream(
                    target.host,
                    target.port,
                    via=target.via,
                    tls=tls_context(target),
                    timeout_s=connect_timeout_s,
                    limit=LINE_LIMIT,
                )
        except Exception as exc:
            raise _translate(exc, target, deadline) from None
        stream = cls(reader, writer, address=target.address)
        try:
            async with asyncio.timeout(command_timeout_s):
                await stream._handshake(target)
        except BaseException as exc:
            await stream.close()
            if isinstance(exc, Exception):
                raise _translate(exc, target, deadline) from None
            raise
        return stream

    async def _handshake(self, target: EngineTarget) -> None:
        # Pipelined: one round trip. If AUTH fails, MONITOR fails too; AUTH's error is the one
        # reported. A refused CLIENT SETNAME or CLIENT ID (a user without +client) does not
        # matter here.
        commands: list[tuple[str, ...]] = []
        if target.password:
            auth = (target.username, target.password) if target.username else (target.password,)
            commands.append(("AUTH", *auth))
        commands.append(("CLIENT", "SETNAME", CLIENT_NAME))
        commands.append(("CLIENT", "ID"))
        commands.append(("MONITOR",))
        self._writer.write(b"".join(_encode(c) for c in commands))
        await self._writer.drain()
        for command in commands:
            reply = await self._reader.readuntil(_CRLF)
            if reply.startswith(b"+"):
                continue
            if reply.startswith(b":") and command == ("CLIENT", "ID"):
                self.client_id = int(reply[1:-2])
                continue
            if reply.startswith(b"-") and command[0] != "CLIENT":
                raise _error_reply(reply[1:-2].decode("utf-8", errors="replace"))
            if not reply.startswith(b"-"):
                raise EngineProtocolError(
                    f"{target.address} did not answer like Valkey or Redis to {command[0]}"
                )

    async def read_line(self) -> RawLine:
        """The next line; EngineError when the connection ends or the server sends an error."""
        reader = self._reader
        try:
            data = await reader.readuntil(_CRLF)
            size, head, cut = len(data) - 2, data[:-2], False
        except asyncio.LimitOverrunError as exc:
            head = await reader.read(exc.consumed)
            size, cut = await self._skip_rest(len(head)), True
            head = head[:LINE_LIMIT]
        except asyncio.IncompleteReadError:
            raise EngineUnreachable(f"{self.address} closed the connection") from None
        except Exception as exc:
            raise translate(exc, address=self.address, timeout_s=0) from None
        if head.startswith(b"+"):
            return RawLine(head[1:], size - 1, cut)
        if head.startswith(b"-"):
            raise _error_reply(head[1:].decode("utf-8", errors="replace"))
        raise EngineProtocolError("the server sent something that is not a MONITOR line")

    async def _skip_rest(self, seen: int) -> int:
        """Read (and drop) the rest of an over-long line; its total length."""
        reader = self._reader
        while True:
            try:
                return seen + len(await reader.readuntil(_CRLF)) - 2
            except asyncio.LimitOverrunError as exc:
                seen += len(await reader.read(exc.consumed))

    async def close(self) -> None:
        writer = self._writer
        writer.close()
        with contextlib.suppress(Exception):
            async with asyncio.timeout(1):
                await writer.wait_closed()


def _encode(command: tuple[str, ...]) -> bytes:
    parts = [f"*{len(command)}\r\n".encode()]
    for item in command:
        data = item.encode()
        parts.append(b"$%d\r\n%s\r\n" % (len(data), data))
    return b"".join(parts)


def _error_reply(text: str) -> EngineError:
    text = " ".join(text.split())
    if text.startswith(("NOAUTH", "WRONGPASS")):
        return EngineAuthError(text)
    return EngineResponseError(text)


def _translate(exc: BaseException, target: EngineTarget, deadline: float) -> EngineError:
    return translate(exc, address=target.address, timeout_s=deadline)
