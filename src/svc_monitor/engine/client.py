"""The wire to one monitored instance: auth, TLS, timeouts, and INFO read raw.

INFO is read without valkey-py's response callback and parsed by engine.info in
one pass: valkey-py's own INFO parsing measured ~0.43 ms CPU per call against ~0.2 ms for
ours, which decides whether 3,000 polls/s per core is reachable.
"""

import asyncio
import functools
import ssl
import time
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from valkey.asyncio import ConnectionPool, Valkey
from valkey.asyncio.retry import Retry
from valkey.backoff import NoBackoff

from svc_monitor.engine.dial import ChannelDialer, TargetConnection, Via
from svc_monitor.engine.errors import (
    EngineError,
    EngineProtocolError,
    EngineUnreachable,
    translate,
)
from svc_monitor.engine.info import InfoTooLarge, ParsedInfo, parse_info
from svc_monitor.engine.ledger import CommandLedger, command_name
from svc_monitor.engine.tls import client_context

CLIENT_NAME = "svc-monitor"
# valkey-py's pool fails a call at once ("Too many connections") when all of these are busy,
# which made the fifth concurrent command on a healthy instance report it unreachable.
# Callers past this many wait for a free connection inside the same deadline instead.
MAX_CONNECTIONS = 4


@dataclass(frozen=True, slots=True)
class EngineTarget:
    """Where and how to reach an instance.

    With `tls`, the certificate is verified against `host` (the real database host name)
    even when `via` dials somewhere else; `tls_insecure` turns verification off.
    """

    host: str
    port: int
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    tls: bool = False
    db: int = 0
    tls_ca_file: str | None = None  # ENGINE_TLS_CA_FILE, for every connection
    tls_ca_cert: str | None = field(default=None, repr=False)  # PEM, this connection's CAs
    tls_cert: str | None = field(default=None, repr=False)  # PEM client certificate (mTLS)
    tls_key: str | None = field(default=None, repr=False)  # PEM private key of tls_cert
    tls_insecure: bool = False
    # Takes part in equality: a Dialer should compare equal while it leads to the same place,
    # or every lookup of a connection's client would replace it.
    via: Via | None = field(default=None, repr=False)

    @property
    def address(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"

    def peer(self, host: str, port: int) -> "EngineTarget":
        """Another node of the same deployment, with these credentials and TLS. Dialled
        directly: only the configured instance is tunnelled
        (docs/features/connections.md#ssh-tunnels); but through an agent, the node is
        reached through the same agent (docs/features/agent.md#clusters)."""
        via = self.via.toward(host, port) if isinstance(self.via, ChannelDialer) else None
        return replace(self, host=host, port=port, via=via)


def tls_context(target: EngineTarget) -> ssl.SSLContext | None:
    """The SSL context for `target` (None without TLS); EngineTlsError if it cannot load."""
    if not target.tls:
        return None
    return client_context(
        ca_pem=target.tls_ca_cert,
        ca_file=target.tls_ca_file,
        cert_pem=target.tls_cert,
        key_pem=target.tls_key,
        insecure=target.tls_insecure,
    )


def _raw(response: Any, **_: Any) -> Any:
    return response


@functools.cache
def _callbacks_of(protocol: int) -> MutableMapping[str | bytes, Any]:
    """valkey-py's reply callbacks with ours, built once and shared by every client: each
    client would otherwise copy the table (about 12 KB) for the life of its connection."""
    client = Valkey(protocol=protocol)
    client.set_response_callback("INFO", _raw)
    # valkey-py's COMMAND callback raises on the nil that COMMAND INFO answers for a
    # renamed or unknown command, and in a pipeline that fails every reply with it:
    # capability detection asks COMMAND INFO MONITOR, so keep the reply as it came.
    client.set_response_callback("COMMAND", _raw)
    return client.response_callbacks


def _shared_callbacks(client: Valkey) -> MutableMapping[str | bytes, Any]:
    protocol = client.connection_pool.connection_kwargs.get("protocol", 2)
    return _callbacks_of(int(protocol))


@functools.lru_cache(maxsize=32)
def _packed(*args: str) -> bytes:
    """A command in RESP, as valkey-py packs it. Polls ask INFO in a handful of forms; a
    read through the API may name any sections, hence a bounded cache."""
    return b"".join(
        [b"*%d\r\n" % len(args)]
        + [b"$%d\r\n%s\r\n" % (len(arg.encode()), arg.encode()) for arg in args]
    )


class EngineClient:
    """A small connection pool to one instance; every call bounded by one deadline."""

    def __init__(
        self,
        target: EngineTarget,
        *,
        connect_timeout_s: float,
        command_timeout_s: float,
        ledger: CommandLedger | None = None,
    ) -> None:
        self.target = target
        self.ledger = ledger if ledger is not None else CommandLedger()
        self.connect_timeout_s = connect_timeout_s
        self.command_timeout_s = command_timeout_s
        # One deadline covers connect, auth and the reply, so nothing can stack up.
        self.deadline_s = connect_timeout_s + command_timeout_s
        self._slots = asyncio.Semaphore(MAX_CONNECTIONS)
        self._closed = False
        # Material that does not load fails every command with the reason, as a socket would.
        self._unusable: EngineError | None = None
        context: ssl.SSLContext | None = None
        try:
            context = tls_context(target)
        except EngineError as exc:
            self._unusable = exc
        pool = ConnectionPool(
            connection_class=TargetConnection,
            via=target.via,
            tls_context=context,
            host=target.host,
            port=target.port,
            username=target.username or None,
            password=target.password or None,
            db=target.db,
            socket_connect_timeout=connect_timeout_s,
            socket_timeout=command_timeout_s,
            # No client-side retries: the poll loop owns cadence and backoff.
            retry=Retry(NoBackoff(), 0),
            retry_on_timeout=False,
            client_name=CLIENT_NAME,
            # No CLIENT SETINFO on connect: a read-only monitoring user is often not allowed
            # it, and every refusal would land in the ACL log we are there to audit.
            lib_name=None,
            lib_version=None,
            max_connections=MAX_CONNECTIONS,
            decode_responses=False,
            protocol=2,
        )
        # INFO, asked every second, goes over a connection of its own when it is free:
        # no pool checkout, no per-command task (bench/poll_fanout.py).
        self._info_connection: TargetConnection = pool.make_connection()  # type: ignore[no-untyped-call]
        self._info_busy = False
        # How many times the INFO connection has been opened: the INFO poll reads the full
        # INFO first on every new one (a reconnect may be to a restarted server).
        self.info_connects = 0
        self._client = Valkey.from_pool(pool)
        self._client.response_callbacks = _shared_callbacks(self._client)

    async def execute(self, *args: Any) -> Any:
        """Run one command; EngineError on any failure."""
        return await self._bounded(
            command_name(args),
            lambda: self._client.execute_command(*args),  # type: ignore[no-untyped-call]
        )

    async def _bounded(self, name: str, call: Callable[[], Awaitable[Any]]) -> Any:
        """`call` under the deadline and a connection slot, counted in the ledger as
        `name`; EngineError on any failure."""
        started = time.perf_counter()
        failed = True
        try:
            async with asyncio.timeout(self.deadline_s), self._slots:
                self._refuse_if_closed()
                reply = await call()
                failed = False
                return reply
        except EngineError:
            raise
        except Exception as exc:
            raise self._translate(exc) from None
        finally:
            self.ledger.record(name, time.perf_counter() - started, failed=failed)

    @property
    def info_link_open(self) -> bool:
        """Whether the INFO connection is open and the server has not closed it: known to the
        event loop without a command (a server that exits closes its sockets at once)."""
        connection = self._info_connection
        return connection.is_connected and not connection.closed_by_peer

    async def ping(self) -> None:
        # Over the INFO connection when it is free, as INFO is: /health PINGs on every call,
        # and a checkout from valkey-py's pool (its stale-data probe under a zero timeout,
        # a task to send) took four more turns of a busy event loop.
        if self._info_busy:
            await self.execute("PING")
        else:
            await self._on_info_connection("PING")

    async def info_raw(self, *sections: str) -> bytes:
        if self._info_busy:
            reply = await self.execute("INFO", *sections)
        else:
            reply = await self._on_info_connection("INFO", *sections)
        return reply if isinstance(reply, bytes) else str(reply).encode()

    async def _on_info_connection(self, name: str, *args: str) -> bytes:
        """One command (INFO or PING) over the INFO connection, bounded as `execute` is,
        its reply read straight off the stream (TargetConnection.ask).

        Any failure closes that connection, so a reply that arrives late can never be read
        as the answer to the next INFO. A connection the server closed while we were not
        looking is opened afresh first, as the pool would.
        """
        connection = self._info_connection

        async def ask() -> bytes:
            if connection.closed_by_peer:
                await connection.disconnect(nowait=True)
            if not connection.is_connected:
                self.info_connects += 1
                await connection.connect()  # type: ignore[no-untyped-call]
            try:
                return await connection.ask(_packed(name, *args))
            except BaseException:
                await connection.disconnect(nowait=True)
                raise

        self._info_busy = True
        try:
            reply: bytes = await self._bounded(name, ask)
            return reply
        finally:
            self._info_busy = False

    async def info(self, *sections: str) -> ParsedInfo:
        raw = await self.info_raw(*sections)
        try:
            return parse_info(raw)
        except InfoTooLarge as exc:
            raise EngineProtocolError(f"{self.target.address}: {exc}") from None

    async def try_each(self, commands: Sequence[Sequence[Any]]) -> list[Any]:
        """Run commands in one round trip; each result is the reply or its EngineError."""
        started = time.perf_counter()
        try:
            async with asyncio.timeout(self.deadline_s), self._slots:
                self._refuse_if_closed()
                pipe = self._client.pipeline(transaction=False)
                for command in commands:
                    pipe.execute_command(*command)
                replies = await pipe.execute(raise_on_error=False)
        except Exception as exc:
            self._record_each(commands, started, failed=True)
            raise self._translate(exc) from None
        self._record_each(commands, started, failed=False)
        return [self._translate(r) if isinstance(r, Exception) else r for r in replies]

    def _record_each(
        self, commands: Sequence[Sequence[Any]], started: float, *, failed: bool
    ) -> None:
        # One round trip for all: its time is shared out evenly.
        share = (time.perf_counter() - started) / max(1, len(commands))
        for command in commands:
            self.ledger.record(command_name(list(command)), share, failed=failed)

    async def close(self) -> None:
        """Close the pool once commands in flight have finished (each within its deadline).

        Closing under a command that is still connecting would let it open a socket in
        a pool nobody closes again; so new commands are refused and the slots drained first.
        """
        if self._closed:
            return
        self._closed = True
        held = 0
        try:
            async with asyncio.timeout(self.deadline_s):
                for _ in range(MAX_CONNECTIONS):
                    await self._slots.acquire()
                    held += 1
        except TimeoutError:
            pass
        finally:
            await self._client.aclose()
            await self._info_connection.disconnect(nowait=True)
            for _ in range(held):
                self._slots.release()

    def _refuse_if_closed(self) -> None:
        if self._closed:
            raise EngineUnreachable(f"the client for {self.target.address} is closed")
        if self._unusable is not None:
            # A fresh error each time: raising one object again would grow its traceback.
            raise type(self._unusable)(self._unusable.message, reason=self._unusable.reason)

    def _translate(self, exc: BaseException) -> EngineError:
        return translate(
            exc,
            address=self.target.address,
            timeout_s=self.deadline_s,
            connect_timeout_s=self.connect_timeout_s,
            command_timeout_s=self.command_timeout_s,
        )
