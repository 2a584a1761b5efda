"""Self-checks of tests/fixtures/servers.py: what other tests rely on when they use it."""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Iterator

import pytest
import valkey
from valkey.exceptions import AuthenticationError, NoPermissionError, ResponseError

from tests.fixtures.servers import (
    CLUSTER_SLOTS,
    HOST,
    EngineKind,
    RunningServer,
    ServerFactory,
    ServerStartError,
    TlsFiles,
)

READER_PASSWORD = "reader-pw"


def _pid_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture(scope="module")
def protected_server(server_factory: ServerFactory) -> Iterator[RunningServer]:
    server = server_factory.start(
        "valkey",
        password="s3cret",
        acl_users=[f"reader on >{READER_PASSWORD} ~* +@read +@connection +acl|whoami"],
    )
    yield server
    server_factory.stop(server)


@pytest.mark.parametrize(
    ("kind", "version_field", "prefix"),
    [
        ("valkey", "valkey_version", "9.1."),
        ("redis7", "redis_version", "7.0."),
        ("redis6", "redis_version", "6.2."),
    ],
)
def test_each_kind_starts_and_reports_its_version(
    request: pytest.FixtureRequest, kind: EngineKind, version_field: str, prefix: str
) -> None:
    server: RunningServer = request.getfixturevalue(f"{kind}_server")
    assert server.kind == kind
    assert server.host == HOST
    with server.client() as conn:
        info = conn.info("server")
        assert str(info[version_field]).startswith(prefix)
        assert info["process_id"] == server.pid
        assert info["tcp_port"] == server.port


def test_password_is_required(protected_server: RunningServer) -> None:
    with (
        protected_server.client(password=None) as anonymous,
        pytest.raises(AuthenticationError),
    ):
        anonymous.ping()
    with protected_server.client() as conn:
        assert conn.ping() is True


def test_acl_user_logs_in_with_its_own_password(protected_server: RunningServer) -> None:
    with protected_server.client(username="reader", password=READER_PASSWORD) as reader:
        assert reader.acl_whoami() == "reader"
        assert reader.get("missing-key") is None
        with pytest.raises(NoPermissionError):
            reader.set("k", "v")
    with (
        protected_server.client(username="reader", password="wrong") as impostor,
        pytest.raises(AuthenticationError),
    ):
        impostor.ping()


def test_tls_server_answers_tls_and_refuses_plain_tcp(
    server_factory: ServerFactory, tls_files: TlsFiles
) -> None:
    server = server_factory.start("redis7", tls=True)
    try:
        assert server.tls == tls_files
        with server.client() as conn:
            assert conn.ping() is True
            assert conn.config_get("port") == {"port": "0"}
        with (
            valkey.Valkey(host=server.host, port=server.port, socket_timeout=2.0) as plain,
            pytest.raises(valkey.ConnectionError),
        ):
            plain.ping()
    finally:
        server_factory.stop(server)


@pytest.mark.parametrize("kind", ["valkey", "redis6"])
def test_tls_is_rejected_for_builds_without_tls(
    server_factory: ServerFactory, kind: EngineKind
) -> None:
    with pytest.raises(ValueError, match="without TLS"):
        server_factory.start(kind, tls=True)


def test_replica_is_linked_to_its_password_protected_master(
    server_factory: ServerFactory,
) -> None:
    master = server_factory.start("valkey", password="m-pw")
    replica = server_factory.start("valkey", replica_of=master)
    try:
        with replica.client() as conn:
            info = conn.info("replication")
            assert info["role"] == "slave"
            assert info["master_link_status"] == "up"
            assert info["master_port"] == master.port
            with master.client() as primary:
                primary.set("replicated", "yes")
            deadline = time.monotonic() + 5.0
            while conn.get("replicated") is None and time.monotonic() < deadline:
                time.sleep(0.02)
            assert conn.get("replicated") == "yes"
    finally:
        server_factory.stop(replica)
        server_factory.stop(master)


def test_three_master_valkey_cluster_is_ok(server_factory: ServerFactory) -> None:
    nodes = server_factory.cluster("valkey", masters=3)
    try:
        assert len({node.port for node in nodes}) == 3
        for node in nodes:
            with node.client() as conn:
                info = conn.cluster("INFO")
                assert info["cluster_state"] == "ok"
                assert int(info["cluster_slots_assigned"]) == CLUSTER_SLOTS
                assert int(info["cluster_size"]) == 3
    finally:
        for node in nodes:
            server_factory.stop(node)


def test_stop_ends_the_process_and_frees_the_port(server_factory: ServerFactory) -> None:
    server = server_factory.start("valkey")
    assert _pid_exists(server.pid)
    server_factory.stop(server)
    assert not _pid_exists(server.pid)
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection((server.host, server.port), timeout=2.0).close()
    server_factory.stop(server)


def test_pause_hangs_the_server_until_resume(server_factory: ServerFactory) -> None:
    server = server_factory.start("valkey")
    try:
        server_factory.pause(server)
        with server.client(socket_timeout=0.3) as conn, pytest.raises(valkey.TimeoutError):
            conn.ping()
        server_factory.resume(server)
        with server.client() as conn:
            assert conn.ping() is True
    finally:
        server_factory.stop(server)


def test_rename_command_removes_commandlog(
    server_factory: ServerFactory, valkey_server: RunningServer
) -> None:
    with valkey_server.client() as conn:
        assert isinstance(conn.execute_command("COMMANDLOG", "LEN", "slow"), int)
    server = server_factory.start("valkey", config={"rename-command": 'COMMANDLOG ""'})
    try:
        with server.client() as conn, pytest.raises(ResponseError, match="unknown command"):
            conn.execute_command("COMMANDLOG", "LEN", "slow")
    finally:
        server_factory.stop(server)


def test_start_failure_reports_the_server_output(server_factory: ServerFactory) -> None:
    # Redis 7.0 has no COMMANDLOG, and renaming an unknown command is fatal at config load.
    with pytest.raises(ServerStartError, match="No such command in rename-command"):
        server_factory.start("redis7", config={"rename-command": 'COMMANDLOG ""'})
