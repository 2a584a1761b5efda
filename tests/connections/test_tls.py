"""Per-connection TLS through the API: tlsCaCert, tlsCert/tlsKey, tlsInsecure, and the hints
a failed connection test gives. Real Redis 7.0 servers with TLS (tests/fixtures/servers.py).
"""

import contextlib
import logging
import socket
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest
import trustme
from pydantic import ValidationError

from svc_monitor.config import describe_validation_error
from svc_monitor.connections import hints
from tests.fixtures.app import AppFactory, RunningApp, make_settings, running_app, target_of
from tests.fixtures.servers import HOST, RunningServer, ServerFactory, TlsFiles

KEY = "a master key of at least 16 chars"
PASSWORD = "tls-Pa55word-not-for-messages"

Restart = Callable[..., AbstractAsyncContextManager[RunningApp]]


def issue(ca: trustme.CA, directory: Path, *names: str) -> dict[str, str]:
    """Server config directives presenting a certificate from `ca` for `names`."""
    directory.mkdir(parents=True, exist_ok=True)
    leaf = ca.issue_cert(*names)
    cert, key = directory / "server.crt", directory / "server.key"
    cert.write_bytes(b"".join(blob.bytes() for blob in leaf.cert_chain_pems))
    leaf.private_key_pem.write_to_path(str(key))
    return {"tls-cert-file": str(cert), "tls-key-file": str(key)}


@pytest.fixture(scope="module")
def tls_server(server_factory: ServerFactory) -> Iterator[RunningServer]:
    """TLS only (port 0, tls-port), certificate for 127.0.0.1 and localhost."""
    server = server_factory.start("redis7", tls=True, password=PASSWORD)
    yield server
    server_factory.stop(server)


@pytest.fixture(scope="module")
def mtls_server(server_factory: ServerFactory) -> Iterator[RunningServer]:
    server = server_factory.start("redis7", tls=True, config={"tls-auth-clients": "yes"})
    yield server
    server_factory.stop(server)


@pytest.fixture(scope="module")
def misnamed_server(
    server_factory: ServerFactory, tls_files: TlsFiles, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningServer]:
    """A certificate from the trusted CA, for a name other than the address we dial."""
    ca = trustme.CA.from_pem(tls_files.ca_path.read_bytes(), tls_files.ca_key_path.read_bytes())
    config = issue(ca, tmp_path_factory.mktemp("misnamed"), "db.example.test")
    server = server_factory.start("redis7", tls=True, config=config)
    yield server
    server_factory.stop(server)


@pytest.fixture(scope="module")
def untrusted_server(
    server_factory: ServerFactory, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningServer]:
    """A certificate for 127.0.0.1 from a CA nobody was told about."""
    config = issue(trustme.CA(), tmp_path_factory.mktemp("untrusted"), HOST)
    server = server_factory.start("redis7", tls=True, config=config)
    yield server
    server_factory.stop(server)


@pytest.fixture
def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        port: int = sock.getsockname()[1]
    return port


def at(server: RunningServer, **extra: Any) -> dict[str, Any]:
    return {"name": f"tls-{server.port}", "host": server.host, "port": server.port, **extra}


async def tried(client: httpx.AsyncClient, **body: Any) -> dict[str, Any]:
    response = await client.post("/api/connections/test", json=body)
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


async def create(client: httpx.AsyncClient, **body: Any) -> dict[str, Any]:
    response = await client.post("/api/connections", json=body)
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    return created


async def health_of(client: httpx.AsyncClient, connection_id: str) -> dict[str, Any]:
    response = await client.get("/api/health", headers={"X-Connection-Id": connection_id})
    assert response.status_code == 200, response.text
    database: dict[str, Any] = response.json()["database"]
    return database


def assert_422_names(response: httpx.Response, field: str) -> None:
    assert response.status_code == 422, response.text
    body = response.json()
    assert field in body["message"]
    assert field in body["fields"]


class TestVerifiedTls:
    async def test_tls_ca_cert_makes_the_servers_certificate_trusted(
        self, api: RunningApp, tls_server: RunningServer, pem: dict[str, str]
    ) -> None:
        body = at(tls_server, tls=True, password=PASSWORD, tlsCaCert=pem["ca"])
        result = await tried(api.client, **body)
        created = await create(api.client, **body)
        health = await health_of(api.client, created["id"])
        assert result["success"] is True, result
        assert result["hint"] is None
        assert (created["tls"], created["hasTlsCaCert"], created["tlsInsecure"]) == (
            True,
            True,
            False,
        )
        assert health["status"] == "connected"

    async def test_rediss_url_turns_tls_on(
        self, api: RunningApp, tls_server: RunningServer, pem: dict[str, str]
    ) -> None:
        url = f"rediss://:{PASSWORD}@{HOST}:{tls_server.port}"
        created = await create(api.client, url=url, tlsCaCert=pem["ca"])
        assert created["tls"] is True
        assert (await health_of(api.client, created["id"]))["status"] == "connected"

    async def test_without_the_ca_the_certificate_is_not_trusted_with_a_hint(
        self, api: RunningApp, tls_server: RunningServer
    ) -> None:
        result = await tried(api.client, **at(tls_server, tls=True, password=PASSWORD))
        assert result["success"] is False
        assert result["errorKind"] == "tls"
        assert "CERTIFICATE_VERIFY_FAILED" in result["error"]
        assert result["hint"] == hints.UNTRUSTED

    async def test_a_host_the_certificate_does_not_name_is_refused_with_a_hint(
        self, api: RunningApp, misnamed_server: RunningServer, pem: dict[str, str]
    ) -> None:
        result = await tried(api.client, **at(misnamed_server, tls=True, tlsCaCert=pem["ca"]))
        assert result["success"] is False
        assert result["errorKind"] == "tls"
        assert "Hostname mismatch" in result["error"] or "IP address mismatch" in result["error"]
        assert "does not name '127.0.0.1'" in result["hint"]

    async def test_create_fails_with_the_hint_in_its_message(
        self, api: RunningApp, misnamed_server: RunningServer, pem: dict[str, str]
    ) -> None:
        response = await api.client.post(
            "/api/connections", json=at(misnamed_server, tls=True, tlsCaCert=pem["ca"])
        )
        assert response.status_code == 400
        body = response.json()
        assert body["message"].startswith("Connection failed: TLS error")
        assert "Hint: The server's certificate does not name '127.0.0.1'" in body["message"]
        assert body["errorKind"] == "tls"
        assert body["hint"].startswith("The server's certificate does not name")


class TestMutualTls:
    async def test_client_certificate_passes_tls_auth_clients(
        self, api: RunningApp, mtls_server: RunningServer, pem: dict[str, str]
    ) -> None:
        created = await create(
            api.client,
            **at(
                mtls_server, tls=True, tlsCaCert=pem["ca"], tlsCert=pem["cert"], tlsKey=pem["key"]
            ),
        )
        assert (created["hasTlsCert"], created["hasTlsKey"]) == (True, True)
        assert (await health_of(api.client, created["id"]))["status"] == "connected"

    async def test_without_a_client_certificate_the_test_fails_clearly(
        self, api: RunningApp, mtls_server: RunningServer, pem: dict[str, str]
    ) -> None:
        result = await tried(api.client, **at(mtls_server, tls=True, tlsCaCert=pem["ca"]))
        assert result["success"] is False
        assert result["error"]
        assert result["hint"] in (hints.CLOSED_NO_CLIENT_CERT, hints.CLIENT_CERT_REQUIRED)

    async def test_a_client_certificate_from_another_ca_is_refused_with_a_hint(
        self, api: RunningApp, mtls_server: RunningServer, pem: dict[str, str]
    ) -> None:
        stranger = trustme.CA().issue_cert("stranger")
        result = await tried(
            api.client,
            **at(
                mtls_server,
                tls=True,
                tlsCaCert=pem["ca"],
                tlsCert=stranger.cert_chain_pems[0].bytes().decode(),
                tlsKey=stranger.private_key_pem.bytes().decode(),
            ),
        )
        assert result["success"] is False
        assert result["hint"] in (hints.CLIENT_CERT_REFUSED, hints.CLOSED_TLS)

    async def test_reads_show_the_client_certificates_subject_and_expiry(
        self, api: RunningApp, mtls_server: RunningServer, pem: dict[str, str]
    ) -> None:
        created = await create(
            api.client,
            **at(
                mtls_server, tls=True, tlsCaCert=pem["ca"], tlsCert=pem["cert"], tlsKey=pem["key"]
            ),
        )
        read = (await api.client.get(f"/api/connections/{created['id']}")).json()
        assert "CN=svc-monitor-test-client" in read["tlsCertSubject"]
        assert read["tlsCertExpiresAt"] > read["createdAt"]

    async def test_an_edit_without_tls_key_keeps_it(
        self, api: RunningApp, mtls_server: RunningServer, pem: dict[str, str]
    ) -> None:
        created = await create(
            api.client,
            **at(
                mtls_server, tls=True, tlsCaCert=pem["ca"], tlsCert=pem["cert"], tlsKey=pem["key"]
            ),
        )
        # tlsCaCert is a reach field: the edit is tested against the server, with the
        # stored key, before it is saved.
        response = await api.client.put(
            f"/api/connections/{created['id']}", json={"name": "renamed", "tlsCaCert": pem["ca"]}
        )
        assert response.status_code == 200, response.text
        assert response.json()["hasTlsKey"] is True
        assert (await health_of(api.client, created["id"]))["status"] == "connected"

    async def test_empty_cert_and_key_clear_them(
        self, api: RunningApp, tls_server: RunningServer, pem: dict[str, str]
    ) -> None:
        created = await create(
            api.client,
            **at(
                tls_server,
                tls=True,
                password=PASSWORD,
                tlsCaCert=pem["ca"],
                tlsCert=pem["cert"],
                tlsKey=pem["key"],
            ),
        )
        response = await api.client.put(
            f"/api/connections/{created['id']}", json={"tlsCert": "", "tlsKey": ""}
        )
        assert response.status_code == 200, response.text
        read = response.json()
        assert (read["hasTlsCert"], read["hasTlsKey"], read["hasTlsCaCert"]) == (
            False,
            False,
            True,
        )
        assert read["tlsCertSubject"] is None


class TestInsecure:
    async def test_connects_to_a_server_whose_certificate_is_not_trusted(
        self, api: RunningApp, untrusted_server: RunningServer
    ) -> None:
        refused = await tried(api.client, **at(untrusted_server, tls=True))
        created = await create(api.client, **at(untrusted_server, tls=True, tlsInsecure=True))
        health = await health_of(api.client, created["id"])
        assert refused["success"] is False
        assert created["tlsInsecure"] is True
        assert health["status"] == "connected"

    async def test_logs_a_warning_once_per_connection(
        self, api: RunningApp, untrusted_server: RunningServer, caplog: pytest.LogCaptureFixture
    ) -> None:
        caplog.set_level(logging.WARNING, logger="svc_monitor")
        created = await create(api.client, **at(untrusted_server, tls=True, tlsInsecure=True))
        for _ in range(3):
            assert (await health_of(api.client, created["id"]))["status"] == "connected"
        warnings = [
            r
            for r in caplog.records
            if r.levelno == logging.WARNING and "tlsInsecure" in r.getMessage()
        ]
        assert len(warnings) == 1
        assert created["id"] in warnings[0].getMessage()


class TestHints:
    async def test_plain_client_on_a_tls_port_is_told_to_turn_tls_on(
        self, api: RunningApp, tls_server: RunningServer
    ) -> None:
        result = await tried(api.client, **at(tls_server, password=PASSWORD))
        assert result["success"] is False
        assert result["errorKind"] == "unreachable"
        assert result["hint"] == hints.CLOSED_PLAIN

    async def test_tls_client_on_a_plain_port_is_told_the_port_is_plain(
        self, api: RunningApp, redis7_server: RunningServer
    ) -> None:
        result = await tried(api.client, **at(redis7_server, tls=True, tlsInsecure=True))
        assert result["success"] is False
        assert result["hint"] == hints.PLAIN_PORT

    async def test_refused_port_hints_at_the_port_and_tls(
        self, api: RunningApp, closed_port: int
    ) -> None:
        result = await tried(api.client, host=HOST, port=closed_port)
        assert result["errorKind"] == "unreachable"
        assert result["hint"] == hints.REFUSED

    async def test_wrongpass_stays_verbatim_and_hints_at_the_token(
        self, api: RunningApp, tls_server: RunningServer, pem: dict[str, str]
    ) -> None:
        body = at(tls_server, tls=True, tlsCaCert=pem["ca"], password="not-the-token")
        result = await tried(api.client, **body)
        assert result["errorKind"] == "auth"
        assert result["error"].startswith("WRONGPASS")
        assert result["hint"] == hints.WRONGPASS

    async def test_missing_password_hints_at_the_token(
        self, api: RunningApp, tls_server: RunningServer, pem: dict[str, str]
    ) -> None:
        # The username `default` goes out with an empty password: Redis says WRONGPASS.
        result = await tried(api.client, **at(tls_server, tls=True, tlsCaCert=pem["ca"]))
        assert result["errorKind"] == "auth"
        assert result["hint"] in (hints.WRONGPASS, hints.NOAUTH)

    async def test_the_connection_dialog_shows_the_hint(
        self, api: RunningApp, tls_server: RunningServer
    ) -> None:
        form = {"HX-Request": "true", "Content-Type": "application/x-www-form-urlencoded"}
        body = f"quick={tls_server.host}:{tls_server.port}"
        result = await api.client.post("/ui/connections/test", content=body, headers=form)
        assert 'data-result="failed"' in result.text
        assert "<div data-hint>The server closed the connection" in result.text


class TestPemValidation:
    @pytest.mark.parametrize(
        ("field", "value"),
        [
            pytest.param("tlsCaCert", "not a certificate", id="ca-not-pem"),
            pytest.param(
                "tlsCaCert",
                "-----BEGIN CERTIFICATE-----\nQUJD\n-----END CERTIFICATE-----\n",
                id="ca-bad-body",
            ),
            pytest.param("tlsCert", "hello", id="cert-not-pem"),
            pytest.param("tlsKey", "hello", id="key-not-pem"),
            pytest.param(
                "tlsKey",
                "-----BEGIN PRIVATE KEY-----\nQUJD\n-----END PRIVATE KEY-----\n",
                id="key-bad-body",
            ),
            pytest.param("tlsCaCert", "x" * (256 * 1024 + 1), id="ca-too-large"),
            pytest.param("tlsKey", "x" * (32 * 1024 + 1), id="key-too-large"),
        ],
    )
    async def test_bad_pem_is_422_naming_the_field(
        self, api: RunningApp, field: str, value: str
    ) -> None:
        body = {"host": HOST, "port": 6379, "tls": True, field: value}
        assert_422_names(await api.client.post("/api/connections/test", json=body), field)

    async def test_a_private_key_in_tls_ca_cert_is_refused_without_echoing_it(
        self, api: RunningApp, pem: dict[str, str], key_lines: list[str]
    ) -> None:
        body = {"host": HOST, "tls": True, "tlsCaCert": pem["key"]}
        response = await api.client.post("/api/connections/test", json=body)
        assert_422_names(response, "tlsCaCert")
        assert "private key" in response.json()["message"]
        assert not any(line in response.text for line in key_lines)

    async def test_a_certificate_in_tls_key_is_refused(
        self, api: RunningApp, pem: dict[str, str]
    ) -> None:
        body = {"host": HOST, "tls": True, "tlsCert": pem["cert"], "tlsKey": pem["cert"]}
        assert_422_names(await api.client.post("/api/connections/test", json=body), "tlsKey")

    async def test_an_encrypted_key_is_refused_with_how_to_decrypt_it(
        self, api: RunningApp, pem: dict[str, str]
    ) -> None:
        from cryptography.hazmat.primitives import serialization

        key = serialization.load_pem_private_key(pem["key"].encode(), password=None)
        encrypted = key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(b"passphrase"),
        ).decode()
        body = {"host": HOST, "tls": True, "tlsCert": pem["cert"], "tlsKey": encrypted}
        response = await api.client.post("/api/connections/test", json=body)
        assert_422_names(response, "tlsKey")
        assert "openssl pkey" in response.json()["message"]

    async def test_cert_without_key_is_422_naming_tls_key(
        self, api: RunningApp, pem: dict[str, str]
    ) -> None:
        body = {"host": HOST, "tls": True, "tlsCert": pem["cert"]}
        assert_422_names(await api.client.post("/api/connections/test", json=body), "tlsKey")

    async def test_key_without_cert_is_422_naming_tls_cert(
        self, api: RunningApp, pem: dict[str, str]
    ) -> None:
        body = {"host": HOST, "tls": True, "tlsKey": pem["key"]}
        assert_422_names(await api.client.post("/api/connections/test", json=body), "tlsCert")

    async def test_a_key_of_another_certificate_is_422_naming_tls_key(
        self, api: RunningApp, pem: dict[str, str]
    ) -> None:
        other = trustme.CA().issue_cert("other").private_key_pem.bytes().decode()
        body = {"host": HOST, "tls": True, "tlsCert": pem["cert"], "tlsKey": other}
        response = await api.client.post("/api/connections/test", json=body)
        assert_422_names(response, "tlsKey")
        assert "does not belong" in response.json()["message"]

    async def test_push_connections_refuse_tls_material(
        self, api: RunningApp, pem: dict[str, str]
    ) -> None:
        for field, value in (("tlsCaCert", pem["ca"]), ("tlsInsecure", False)):
            body = {"source": "push", "name": "pushed", "host": "10.1.2.3", field: value}
            assert_422_names(await api.client.post("/api/connections", json=body), field)


class TestTlsKeySecrecy:
    async def test_never_in_any_response_or_log(
        self,
        api: RunningApp,
        mtls_server: RunningServer,
        pem: dict[str, str],
        key_lines: list[str],
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        caplog.set_level(logging.DEBUG)
        body = at(
            mtls_server, tls=True, tlsCaCert=pem["ca"], tlsCert=pem["cert"], tlsKey=pem["key"]
        )
        responses = [
            await api.client.post("/api/connections/test", json=body),
            await api.client.post("/api/connections/test", json={**body, "port": 1}),
            created := await api.client.post("/api/connections", json=body),
        ]
        connection_id = created.json()["id"]
        responses += [
            await api.client.get("/api/connections"),
            await api.client.get(f"/api/connections/{connection_id}"),
            await api.client.put(f"/api/connections/{connection_id}", json={"tlsKey": pem["key"]}),
            await api.client.get("/api/health", headers={"X-Connection-Id": connection_id}),
        ]
        assert all(r.status_code < 300 for r in responses), [r.text for r in responses]
        logged = "\n".join(
            f"{r.getMessage()} {r.exc_text or ''} {r.__dict__}" for r in caplog.records
        )
        for line in key_lines:
            for response in responses:
                assert line not in response.text
            assert line not in logged
        assert "tlsKey" not in created.json()


@pytest.fixture
def start(valkey_server: RunningServer, persistent_storage: dict[str, Any]) -> Restart:
    """Start an app on the same sqlite file or PostgreSQL database each time it is called."""

    def start(**overrides: Any) -> AbstractAsyncContextManager[RunningApp]:
        values = {**target_of(valkey_server), **persistent_storage, **overrides}
        return running_app(make_settings(**values))

    return start


async def stored_row(storage: dict[str, Any], connection_id: str) -> dict[str, Any]:
    """One `connections` row as it is on disk, read past the service."""
    if storage["STORAGE_TYPE"] == "sqlite":
        with contextlib.closing(sqlite3.connect(storage["STORAGE_SQLITE_FILEPATH"])) as db:
            db.row_factory = sqlite3.Row
            rows = db.execute("SELECT * FROM connections WHERE id = ?", (connection_id,))
            return dict(rows.fetchone())
    conn = await asyncpg.connect(storage["STORAGE_URL"])
    try:
        row = await conn.fetchrow("SELECT * FROM connections WHERE id = $1", connection_id)
        assert row is not None
        return dict(row)
    finally:
        await conn.close()


class TestTlsKeyAtRest:
    async def test_is_encrypted_with_encryption_key_and_still_connects_after_restart(
        self,
        start: Restart,
        persistent_storage: dict[str, Any],
        mtls_server: RunningServer,
        pem: dict[str, str],
        key_lines: list[str],
    ) -> None:
        body = at(
            mtls_server, tls=True, tlsCaCert=pem["ca"], tlsCert=pem["cert"], tlsKey=pem["key"]
        )
        async with start(ENCRYPTION_KEY=KEY) as first:
            connection_id = (await create(first.client, **body))["id"]
        row = await stored_row(persistent_storage, connection_id)
        assert row["tls_key"].startswith("v1:")
        assert "PRIVATE KEY" not in row["tls_key"]
        assert not any(line in row["tls_key"] for line in key_lines)
        assert row["tls_cert"] == pem["cert"].strip()
        assert bool(row["tls_insecure"]) is False
        async with start(ENCRYPTION_KEY=KEY) as second:
            health = await health_of(second.client, connection_id)
        assert health["status"] == "connected"

    async def test_a_plain_key_is_sealed_once_encryption_key_is_set(
        self,
        start: Restart,
        persistent_storage: dict[str, Any],
        tls_server: RunningServer,
        pem: dict[str, str],
    ) -> None:
        body = at(
            tls_server,
            tls=True,
            password=PASSWORD,
            tlsCaCert=pem["ca"],
            tlsCert=pem["cert"],
            tlsKey=pem["key"],
        )
        async with start() as first:
            connection_id = (await create(first.client, **body))["id"]
        assert (await stored_row(persistent_storage, connection_id))["tls_key"].startswith("plain:")
        async with start(ENCRYPTION_KEY=KEY) as second:
            read = (await second.client.get(f"/api/connections/{connection_id}")).json()
        assert (await stored_row(persistent_storage, connection_id))["tls_key"].startswith("v1:")
        assert read["hasTlsKey"] is True


class TestDefaultConnectionFromEnvironment:
    async def test_db_tls_files_fill_the_default_connection(
        self, memory_app_factory: AppFactory, mtls_server: RunningServer, tls_files: TlsFiles
    ) -> None:
        async with memory_app_factory(
            DB_HOST=HOST,
            DB_PORT=mtls_server.port,
            DB_TLS=True,
            DB_TLS_CA_FILE=tls_files.ca_path,
            DB_TLS_CERT_FILE=tls_files.client_cert_path,
            DB_TLS_KEY_FILE=tls_files.client_key_path,
        ) as app:
            read = (await app.client.get("/api/connections/env-default")).json()
            health = await health_of(app.client, "env-default")
        assert (read["hasTlsCaCert"], read["hasTlsCert"], read["hasTlsKey"]) == (True, True, True)
        assert health["status"] == "connected"

    @pytest.mark.parametrize(
        ("files", "named"),
        [
            pytest.param({"DB_TLS_CA_FILE": "missing"}, "DB_TLS_CA_FILE", id="ca-missing"),
            pytest.param({"DB_TLS_CA_FILE": "client_key"}, "DB_TLS_CA_FILE", id="ca-is-a-key"),
            pytest.param({"DB_TLS_CERT_FILE": "client_cert"}, "DB_TLS_KEY_FILE", id="no-key"),
            pytest.param({"DB_TLS_KEY_FILE": "client_key"}, "DB_TLS_CERT_FILE", id="no-cert"),
            pytest.param(
                {"DB_TLS_CERT_FILE": "client_cert", "DB_TLS_KEY_FILE": "client_cert"},
                "DB_TLS_KEY_FILE",
                id="key-is-a-cert",
            ),
            pytest.param(
                {"DB_TLS_CERT_FILE": "client_cert", "DB_TLS_KEY_FILE": "key"},
                "DB_TLS_KEY_FILE",
                id="key-of-another-cert",
            ),
        ],
    )
    def test_bad_files_stop_startup_naming_the_variable(
        self, tls_files: TlsFiles, key_lines: list[str], files: dict[str, str], named: str
    ) -> None:
        paths = {
            "missing": tls_files.ca_path.with_name("missing.pem"),
            "client_key": tls_files.client_key_path,
            "client_cert": tls_files.client_cert_path,
            "key": tls_files.key_path,  # the server's key
        }
        with pytest.raises(ValidationError) as caught:
            make_settings(**{name: paths[which] for name, which in files.items()})
        message = describe_validation_error(caught.value)
        assert named in message
        assert not any(line in message for line in key_lines)
