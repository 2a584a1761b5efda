"""Per-connection TLS in the engine: the one SSL context, client certificates, `via`.

Real Redis 7.0 servers with the fixture CA (tests/fixtures/servers.py); no mocks. A
`Dialer` here is a plain object that answers the server's real address, as the SSH tunnel's
local forward would.
"""

import asyncio
import tempfile
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import trustme

from svc_monitor.console.monitor.stream import MonitorStream
from svc_monitor.engine.client import EngineClient, EngineTarget
from svc_monitor.engine.errors import EngineError, EngineTimeout, EngineTlsError
from tests.fixtures.servers import HOST, RunningServer, ServerFactory

TIMEOUT_S = 1.0

Connect = Callable[..., EngineClient]


@dataclass(frozen=True)
class FixedDialer:
    """Dials one address whatever the target's host: an SSH forward's local end."""

    host: str
    port: int
    asked: list[int]

    async def address(self) -> tuple[str, int]:
        self.asked.append(1)
        return self.host, self.port


@pytest.fixture
async def connect() -> AsyncIterator[Connect]:
    clients: list[EngineClient] = []

    def make(host: str, port: int, **target: object) -> EngineClient:
        client = EngineClient(
            EngineTarget(host, port, **target),  # type: ignore[arg-type]
            connect_timeout_s=TIMEOUT_S,
            command_timeout_s=TIMEOUT_S,
        )
        clients.append(client)
        return client

    yield make
    await asyncio.gather(*(client.close() for client in clients))


@pytest.fixture(scope="module")
def tls_server(server_factory: ServerFactory) -> Iterator[RunningServer]:
    server = server_factory.start("redis7", tls=True)
    yield server
    server_factory.stop(server)


@pytest.fixture(scope="module")
def mtls_server(server_factory: ServerFactory) -> Iterator[RunningServer]:
    server = server_factory.start("redis7", tls=True, config={"tls-auth-clients": "yes"})
    yield server
    server_factory.stop(server)


@pytest.fixture(scope="module")
def material(pem: dict[str, str]) -> dict[str, str]:
    """The shared PEM fixture as EngineTarget's keyword arguments."""
    return {"tls_ca_cert": pem["ca"], "tls_cert": pem["cert"], "tls_key": pem["key"]}


def entries(directory: Path) -> list[Path]:
    return list(directory.iterdir())


async def error_of(client: EngineClient) -> EngineError:
    with pytest.raises(EngineError) as caught:
        await client.ping()
    return caught.value


class TestTlsContext:
    async def test_ca_given_as_pem_verifies_the_server(
        self, connect: Connect, tls_server: RunningServer, material: dict[str, str]
    ) -> None:
        client = connect(HOST, tls_server.port, tls=True, tls_ca_cert=material["tls_ca_cert"])
        await client.ping()

    async def test_without_the_ca_the_certificate_is_untrusted(
        self, connect: Connect, tls_server: RunningServer
    ) -> None:
        error = await error_of(connect(HOST, tls_server.port, tls=True))
        assert isinstance(error, EngineTlsError)
        assert error.reason == "untrusted"

    async def test_insecure_skips_verification(
        self, connect: Connect, tls_server: RunningServer
    ) -> None:
        await connect(HOST, tls_server.port, tls=True, tls_insecure=True).ping()

    async def test_client_certificate_passes_tls_auth_clients(
        self, connect: Connect, mtls_server: RunningServer, material: dict[str, str]
    ) -> None:
        await connect(HOST, mtls_server.port, tls=True, **material).ping()

    async def test_no_client_certificate_is_closed_by_the_server(
        self, connect: Connect, mtls_server: RunningServer, material: dict[str, str]
    ) -> None:
        client = connect(HOST, mtls_server.port, tls=True, tls_ca_cert=material["tls_ca_cert"])
        error = await error_of(client)
        # Redis 7.0 with TLS 1.3 resets the connection; an OpenSSL that delivers the alert
        # first reports it as such.
        assert error.reason in ("closed", "client_cert_required")

    async def test_key_files_are_gone_once_the_client_is_built(
        self,
        connect: Connect,
        mtls_server: RunningServer,
        material: dict[str, str],
        tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
        client = connect(HOST, mtls_server.port, tls=True, **material)
        assert entries(tmp_path) == []
        await client.ping()

    async def test_unloadable_ca_file_fails_every_command_with_a_tls_error(
        self, connect: Connect, tls_server: RunningServer, tmp_path: Path
    ) -> None:
        client = connect(HOST, tls_server.port, tls=True, tls_ca_file=str(tmp_path / "none"))
        for _ in range(2):
            error = await error_of(client)
            assert isinstance(error, EngineTlsError)
            assert error.reason == "setup"
            assert "ENGINE_TLS_CA_FILE" in error.message

    async def test_tls_against_a_plain_port_is_a_handshake_timeout(
        self, connect: Connect, redis7_server: RunningServer
    ) -> None:
        error = await error_of(connect(HOST, redis7_server.port, tls=True, tls_insecure=True))
        assert isinstance(error, EngineTimeout)
        assert error.reason == "tls_handshake_timeout"
        assert "TLS handshake" in error.message


class TestVia:
    async def test_dials_the_dialers_address_and_verifies_the_real_host(
        self, connect: Connect, tls_server: RunningServer, material: dict[str, str]
    ) -> None:
        dialer = FixedDialer(HOST, tls_server.port, [])
        # Port 1 on "localhost" has nothing behind it: only the dialer's address answers.
        client = connect("localhost", 1, tls=True, via=dialer, tls_ca_cert=material["tls_ca_cert"])
        await client.ping()
        assert dialer.asked

    async def test_a_host_the_certificate_does_not_name_is_refused_through_via(
        self, connect: Connect, tls_server: RunningServer, material: dict[str, str]
    ) -> None:
        dialer = FixedDialer(HOST, tls_server.port, [])
        client = connect(
            "db.example.test", 6379, tls=True, via=dialer, tls_ca_cert=material["tls_ca_cert"]
        )
        error = await error_of(client)
        assert isinstance(error, EngineTlsError)
        assert error.reason == "hostname"
        assert "db.example.test" in error.message

    def test_via_is_left_out_of_the_targets_repr(self) -> None:
        target = EngineTarget("db.example.test", 6379, via=FixedDialer("10.9.8.7", 1234, []))
        assert "10.9.8.7" not in repr(target)
        assert "1234" not in repr(target)

    def test_peers_are_dialled_directly(self) -> None:
        target = EngineTarget("db.example.test", 6379, tls=True, via=FixedDialer(HOST, 1, []))
        peer = target.peer("10.0.0.2", 6380)
        assert (peer.host, peer.port, peer.via, peer.tls) == ("10.0.0.2", 6380, None, True)

    async def test_monitor_stream_uses_the_client_certificate_and_via(
        self, mtls_server: RunningServer, material: dict[str, str]
    ) -> None:
        dialer = FixedDialer(HOST, mtls_server.port, [])
        target = EngineTarget(
            "localhost",
            1,
            tls=True,
            via=dialer,
            tls_ca_cert=material["tls_ca_cert"],
            tls_cert=material["tls_cert"],
            tls_key=material["tls_key"],
        )
        stream = await MonitorStream.open(
            target, connect_timeout_s=TIMEOUT_S, command_timeout_s=TIMEOUT_S
        )
        try:
            assert stream.client_id is not None
        finally:
            await stream.close()
        assert dialer.asked

    async def test_monitor_stream_names_an_untrusted_certificate(
        self, tls_server: RunningServer
    ) -> None:
        other = trustme.CA().cert_pem.bytes().decode()
        target = EngineTarget(HOST, tls_server.port, tls=True, tls_ca_cert=other)
        with pytest.raises(EngineTlsError) as caught:
            await MonitorStream.open(target, connect_timeout_s=TIMEOUT_S, command_timeout_s=1)
        assert caught.value.reason == "untrusted"
