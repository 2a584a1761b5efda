"""EngineClient against real servers and real faults on loopback: hung, refusing, slow and
misbehaving servers."""

import asyncio
import socket
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest
import trustme

from svc_monitor.engine.client import MAX_CONNECTIONS, EngineClient, EngineTarget
from svc_monitor.engine.errors import (
    EngineAuthError,
    EngineError,
    EngineResponseError,
    EngineTimeout,
    EngineTlsError,
    EngineUnreachable,
)
from svc_monitor.engine.info import ParsedInfo
from tests.fixtures.servers import HOST, RunningServer, ServerFactory, TlsFiles

# Distinctive, so a leak into any message is unmistakable.
SERVER_PASSWORD = "srv-pw-Q7zK-not-for-messages"
WRONG_PASSWORD = "wrong-pw-M3xV-not-for-messages"
READER = "reader"
READER_PASSWORD = "reader-pw-J8tR-not-for-messages"
SECRETS = (SERVER_PASSWORD, WRONG_PASSWORD, READER_PASSWORD)

CONNECT_TIMEOUT_S = 0.5
COMMAND_TIMEOUT_S = 0.5
DEADLINE_S = CONNECT_TIMEOUT_S + COMMAND_TIMEOUT_S
SLACK_S = 0.5

Connect = Callable[..., EngineClient]


def assert_no_secret(error: EngineError) -> None:
    for text in (error.message, str(error), repr(error)):
        for secret in SECRETS:
            assert secret not in text


async def failure_of(client: EngineClient) -> tuple[EngineError, float]:
    """The error a PING ends with, and how long it took to get it."""
    started = time.monotonic()
    with pytest.raises(EngineError) as caught:
        await client.ping()
    return caught.value, time.monotonic() - started


@pytest.fixture
async def connect() -> AsyncIterator[Connect]:
    """Build EngineClients with short timeouts; every one is closed after the test."""
    clients: list[EngineClient] = []

    def make(
        host: str = HOST,
        port: int = 0,
        *,
        connect_timeout_s: float = CONNECT_TIMEOUT_S,
        command_timeout_s: float = COMMAND_TIMEOUT_S,
        **target: object,
    ) -> EngineClient:
        client = EngineClient(
            EngineTarget(host, port, **target),  # type: ignore[arg-type]
            connect_timeout_s=connect_timeout_s,
            command_timeout_s=command_timeout_s,
        )
        clients.append(client)
        return client

    yield make
    await asyncio.gather(*(client.close() for client in clients))


@pytest.fixture(scope="module")
def tls_server(server_factory: ServerFactory) -> Iterator[RunningServer]:
    server = server_factory.start("redis7", tls=True, password=SERVER_PASSWORD)
    yield server
    server_factory.stop(server)


@pytest.fixture(scope="module")
def password_server(server_factory: ServerFactory) -> Iterator[RunningServer]:
    server = server_factory.start(
        "valkey",
        password=SERVER_PASSWORD,
        acl_users=[f"{READER} on >{READER_PASSWORD} ~* +@read +@connection"],
    )
    yield server
    server_factory.stop(server)


@pytest.fixture
def stoppable_server(server_factory: ServerFactory) -> Iterator[RunningServer]:
    """A server of this test's own, since the test SIGSTOPs it."""
    server = server_factory.start("valkey")
    yield server
    server_factory.stop(server)


@pytest.fixture
def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        port: int = sock.getsockname()[1]
    return port  # nothing listens here once the socket is closed


@pytest.fixture
def never_accepting_port() -> Iterator[int]:
    """A listener whose backlog is full: further connects hang in SYN_SENT."""
    with socket.socket() as listener, socket.socket() as filler:
        listener.bind((HOST, 0))
        listener.listen(0)
        port: int = listener.getsockname()[1]
        filler.settimeout(1.0)
        filler.connect((HOST, port))  # takes the only backlog slot; never accepted
        yield port


class TestEngineClient:
    async def test_tls_with_the_servers_ca_pings_and_reads_info(
        self, connect: Connect, tls_server: RunningServer, tls_files: TlsFiles
    ) -> None:
        client = connect(
            port=tls_server.port,
            password=SERVER_PASSWORD,
            tls=True,
            tls_ca_file=str(tls_files.ca_path),
        )
        await client.ping()
        info = await client.info("server")
        assert (info.get_str("server", "redis_version") or "").startswith("7.0.")
        assert set(info.sections) == {"server"}

    async def test_tls_without_the_ca_fails_verification(
        self, connect: Connect, tls_server: RunningServer
    ) -> None:
        client = connect(port=tls_server.port, password=SERVER_PASSWORD, tls=True)
        error, _ = await failure_of(client)
        assert isinstance(error, EngineTlsError)
        assert error.kind == "tls"
        assert "CERTIFICATE_VERIFY_FAILED" in error.message
        assert_no_secret(error)

    async def test_tls_with_another_ca_fails_verification(
        self, connect: Connect, tls_server: RunningServer, tmp_path: Path
    ) -> None:
        other_ca = tmp_path / "other-ca.pem"
        trustme.CA().cert_pem.write_to_path(str(other_ca))
        client = connect(
            port=tls_server.port, password=SERVER_PASSWORD, tls=True, tls_ca_file=str(other_ca)
        )
        error, _ = await failure_of(client)
        assert isinstance(error, EngineTlsError)
        assert_no_secret(error)

    async def test_wrong_password_reports_wrongpass(
        self, connect: Connect, password_server: RunningServer
    ) -> None:
        client = connect(port=password_server.port, password=WRONG_PASSWORD)
        error, _ = await failure_of(client)
        assert isinstance(error, EngineAuthError)
        assert error.kind == "auth"
        assert error.message.startswith("WRONGPASS")
        assert_no_secret(error)

    async def test_wrong_password_for_a_named_user_reports_wrongpass(
        self, connect: Connect, password_server: RunningServer
    ) -> None:
        client = connect(port=password_server.port, username=READER, password=WRONG_PASSWORD)
        error, _ = await failure_of(client)
        assert isinstance(error, EngineAuthError)
        assert error.message.startswith("WRONGPASS")
        assert_no_secret(error)

    async def test_missing_password_reports_noauth(
        self, connect: Connect, password_server: RunningServer
    ) -> None:
        client = connect(port=password_server.port)
        error, _ = await failure_of(client)
        assert isinstance(error, EngineAuthError)
        assert error.message.startswith("NOAUTH")
        assert_no_secret(error)

    async def test_command_the_user_may_not_run_reports_noperm(
        self, connect: Connect, password_server: RunningServer
    ) -> None:
        client = connect(port=password_server.port, username=READER, password=READER_PASSWORD)
        await client.ping()
        with pytest.raises(EngineResponseError) as caught:
            await client.execute("SET", "svc-monitor:test", "1")
        assert caught.value.message.startswith("NOPERM")
        assert_no_secret(caught.value)
        await client.ping()  # the refusal leaves the connection usable

    async def test_closed_port_is_unreachable_at_once(
        self, connect: Connect, closed_port: int
    ) -> None:
        client = connect(port=closed_port, password=SERVER_PASSWORD, connect_timeout_s=3.0)
        error, elapsed = await failure_of(client)
        assert isinstance(error, EngineUnreachable)
        assert error.kind == "unreachable"
        assert elapsed < 1.0
        assert_no_secret(error)

    async def test_listener_that_never_accepts_times_out_on_connect(
        self, connect: Connect, never_accepting_port: int
    ) -> None:
        client = connect(port=never_accepting_port, password=SERVER_PASSWORD)
        error, elapsed = await failure_of(client)
        assert isinstance(error, EngineTimeout)
        assert error.kind == "timeout"
        assert elapsed < DEADLINE_S + SLACK_S
        assert error.message.startswith("Could not connect")
        assert f"{CONNECT_TIMEOUT_S:g} s" in error.message
        assert_no_secret(error)

    async def test_stopped_server_times_out_then_recovers_on_resume(
        self, connect: Connect, server_factory: ServerFactory, stoppable_server: RunningServer
    ) -> None:
        client = connect(port=stoppable_server.port, password=None)
        await client.ping()  # a pooled connection exists before the server stops
        server_factory.pause(stoppable_server)
        try:
            error, elapsed = await failure_of(client)
        finally:
            server_factory.resume(stoppable_server)
        assert isinstance(error, EngineTimeout)
        assert elapsed < DEADLINE_S + SLACK_S
        assert_no_secret(error)
        # The reply to the timed-out PING must not be read as the answer to a later command.
        assert await client.execute("ECHO", "after-resume") == b"after-resume"

    async def test_more_calls_than_connections_on_a_stopped_server_all_time_out(
        self, connect: Connect, server_factory: ServerFactory, stoppable_server: RunningServer
    ) -> None:
        client = connect(port=stoppable_server.port)
        calls = 2 * MAX_CONNECTIONS
        server_factory.pause(stoppable_server)
        try:
            started = time.monotonic()
            results = await asyncio.gather(
                *(client.execute("ECHO", f"during-{n}") for n in range(calls)),
                return_exceptions=True,
            )
            elapsed = time.monotonic() - started
        finally:
            server_factory.resume(stoppable_server)
        # A hung instance is a timeout for every caller, not "unreachable" for the overflow.
        assert [type(r) for r in results] == [EngineTimeout] * calls
        assert elapsed < DEADLINE_S + SLACK_S
        # No connection leaked or left with a stale reply: every slot answers correctly.
        replies = await asyncio.gather(
            *(client.execute("ECHO", f"after-{n}") for n in range(calls))
        )
        assert replies == [f"after-{n}".encode() for n in range(calls)]

    async def test_more_concurrent_calls_than_connections_all_succeed(
        self, connect: Connect, valkey_server: RunningServer
    ) -> None:
        client = connect(port=valkey_server.port)
        calls = 3 * MAX_CONNECTIONS
        replies = await asyncio.gather(*(client.execute("ECHO", f"n{n}") for n in range(calls)))
        assert replies == [f"n{n}".encode() for n in range(calls)]

    async def test_info_returns_parsed_sections(
        self, connect: Connect, valkey_server: RunningServer
    ) -> None:
        client = connect(port=valkey_server.port)
        info = await client.info()
        assert isinstance(info, ParsedInfo)
        assert {"server", "clients", "memory", "stats", "replication"} <= set(info.sections)
        assert info.get_int("server", "tcp_port") == valkey_server.port
        assert (info.get_str("server", "valkey_version") or "").startswith("9.1.")
        assert info.get_str("replication", "role") == "master"
        assert (info.get_int("clients", "connected_clients") or 0) >= 1

    async def test_info_with_a_section_returns_only_that_section(
        self, connect: Connect, valkey_server: RunningServer
    ) -> None:
        client = connect(port=valkey_server.port)
        info = await client.info("clients")
        assert set(info.sections) == {"clients"}

    async def test_info_after_a_timeout_is_the_reply_to_the_new_question(
        self, connect: Connect, server_factory: ServerFactory, stoppable_server: RunningServer
    ) -> None:
        client = connect(port=stoppable_server.port)
        await client.info()  # INFO's own connection is open before the server stops
        server_factory.pause(stoppable_server)
        try:
            with pytest.raises(EngineTimeout):
                await client.info("server")
        finally:
            server_factory.resume(stoppable_server)
        # The late reply to INFO server must not be taken for the answer to INFO clients.
        assert set((await client.info("clients")).sections) == {"clients"}

    async def test_info_reconnects_when_the_server_closed_its_connection(
        self, connect: Connect, valkey_server: RunningServer
    ) -> None:
        client = connect(port=valkey_server.port)
        await client.info("server")
        # Close every connection of ours, as a server's idle timeout or a restart would.
        killer = connect(port=valkey_server.port)
        await killer.execute("CLIENT", "KILL", "SKIPME", "YES")
        await asyncio.sleep(0.2)  # the close reaches us while nothing is being asked
        # Not a failure: the pool reconnects a connection closed under it, and so does INFO.
        assert set((await client.info("clients")).sections) == {"clients"}
        assert client.ledger.costs()["INFO"].errors == 0

    async def test_concurrent_info_reads_each_get_their_own_answer(
        self, connect: Connect, valkey_server: RunningServer
    ) -> None:
        client = connect(port=valkey_server.port)
        sections = ["server", "clients", "memory", "stats", "cpu", "replication"]
        answers = await asyncio.gather(*(client.info(name) for name in sections))
        assert [set(answer.sections) for answer in answers] == [{name} for name in sections]

    async def test_try_each_returns_errors_in_place_without_raising(
        self, connect: Connect, valkey_server: RunningServer
    ) -> None:
        client = connect(port=valkey_server.port)
        replies = await client.try_each(
            [["ECHO", "first"], ["NO-SUCH-COMMAND"], ["ECHO", "last"], ["LATENCY", "LATEST"]]
        )
        assert replies[0] == b"first"
        assert isinstance(replies[1], EngineResponseError)
        assert "unknown command" in replies[1].message
        assert replies[2] == b"last"
        assert isinstance(replies[3], list)

    async def test_clients_share_one_reply_table_and_each_keeps_our_readings(
        self, connect: Connect, valkey_server: RunningServer, password_server: RunningServer
    ) -> None:
        # One table for every client (each copy cost ~12 KB a watched server), with our
        # readings of INFO (raw) and COMMAND (nil kept) in force on every one of them.
        plain = connect(port=valkey_server.port)
        other = connect(port=password_server.port, password=SERVER_PASSWORD)
        assert plain._client.response_callbacks is other._client.response_callbacks
        for client in (plain, other):
            assert isinstance(await client.execute("INFO", "server"), bytes)
            assert await client.execute("COMMAND", "INFO", "NO-SUCH-COMMAND") == [None]
            assert await client.execute("CONFIG", "GET", "maxmemory") == [b"maxmemory", b"0"]

    async def test_try_each_against_a_closed_port_raises_unreachable(
        self, connect: Connect, closed_port: int
    ) -> None:
        client = connect(port=closed_port)
        with pytest.raises(EngineUnreachable):
            await client.try_each([["PING"]])


class CraftedServer:
    """A loopback TCP server that answers INFO (or anything, with `always`) with crafted bytes
    and every other command with +OK.

    It stands in for servers that are not Valkey or Redis, or that misbehave, which no
    real engine can be made to do (protocol violations; a target that is not an engine).
    """

    def __init__(self, reply: bytes, *, always: bool = False) -> None:
        self.reply = reply
        self.always = always
        self.port = 0
        self._server: asyncio.Server | None = None

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while request := await reader.read(65536):
                crafted = self.always or b"INFO" in request.upper()
                writer.write(self.reply if crafted else b"+OK\r\n")
                await writer.drain()
        except ConnectionError:
            pass
        finally:
            writer.close()

    async def __aenter__(self) -> "CraftedServer":
        self._server = await asyncio.start_server(self._answer, HOST, 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *_: object) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()


def bulk(body: bytes) -> bytes:
    return b"$%d\r\n%s\r\n" % (len(body), body)


class TestHostileServers:
    async def test_http_server_is_a_protocol_error(self, connect: Connect) -> None:
        async with CraftedServer(b"HTTP/1.1 400 Bad Request\r\n\r\n", always=True) as server:
            client = connect(port=server.port)
            with pytest.raises(EngineError) as caught:
                await client.info()
        assert caught.value.kind == "protocol"
        assert f"{HOST}:{server.port}" in caught.value.message

    async def test_oversized_info_is_refused_not_parsed(self, connect: Connect) -> None:
        body = b"# Server\r\nredis_version:7.0.0\r\nx:" + b"y" * (5 * 1024 * 1024) + b"\r\n"
        async with CraftedServer(bulk(body)) as server:
            client = connect(port=server.port)
            with pytest.raises(EngineError) as caught:
                await client.info()
        assert caught.value.kind == "protocol"
        assert "limit" in caught.value.message

    async def test_garbage_info_lines_are_skipped(self, connect: Connect) -> None:
        body = (
            b"# Server\r\nno colon here\r\n\x00\x01\x02\r\nredis_version:7.0.15\r\nuptime:abc\r\n"
        )
        async with CraftedServer(bulk(body)) as server:
            info = await connect(port=server.port).info()
        assert info.get_str("server", "redis_version") == "7.0.15"
        assert info.get_int("server", "uptime") is None
        assert info.skipped_lines == 2


class TestQuietConnect:
    async def test_a_limited_monitoring_user_leaves_no_acl_denials(
        self, server_factory: ServerFactory
    ) -> None:
        server = server_factory.start(
            "valkey", acl_users=["watcher on >watch-pw ~* +@read +info +ping +client|setname"]
        )
        try:
            client = EngineClient(
                EngineTarget(HOST, server.port, username="watcher", password="watch-pw"),
                connect_timeout_s=CONNECT_TIMEOUT_S,
                command_timeout_s=COMMAND_TIMEOUT_S,
            )
            try:
                await client.info("server")
            finally:
                await client.close()
            with server.client() as admin:
                denials = admin.execute_command("ACL", "LOG")
        finally:
            server_factory.stop(server)
        assert denials == []
