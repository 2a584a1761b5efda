import contextlib
import json
import logging
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import AbstractAsyncContextManager
from typing import Any

import asyncpg
import httpx
import pytest

from svc_monitor.app import StartupError
from tests.fixtures.app import AppFactory, RunningApp, make_settings, running_app, target_of
from tests.fixtures.servers import RunningServer, ServerFactory
from tests.fixtures.sshd import SSH_LOGIN_TIMEOUTS, RunningSshd, SshdFactory, tunnel_fields

KEY = "a master key of at least 16 chars"
OTHER_KEY = "another master key, also 16+ chars"
PASSWORD = "s3cret-Pa55word"

Restart = Callable[..., AbstractAsyncContextManager[RunningApp]]


@pytest.fixture(scope="module")
def protected(server_factory: ServerFactory) -> Iterator[RunningServer]:
    server = server_factory.start("redis7", password=PASSWORD)
    yield server
    server_factory.stop(server)


@pytest.fixture
def start(valkey_server: RunningServer, persistent_storage: dict[str, Any]) -> Restart:
    """Start an app on the same sqlite file or PostgreSQL database each time it is called."""

    def start(**overrides: Any) -> AbstractAsyncContextManager[RunningApp]:
        values = {**target_of(valkey_server), **persistent_storage, **overrides}
        return running_app(make_settings(**values))

    return start


async def stored_rows(storage: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The `connections` table as it is on disk, read past the service."""
    if storage["STORAGE_TYPE"] == "sqlite":
        with contextlib.closing(sqlite3.connect(storage["STORAGE_SQLITE_FILEPATH"])) as db:
            db.row_factory = sqlite3.Row
            return {row["id"]: dict(row) for row in db.execute("SELECT * FROM connections")}
    conn = await asyncpg.connect(storage["STORAGE_URL"])
    try:
        return {row["id"]: dict(row) for row in await conn.fetch("SELECT * FROM connections")}
    finally:
        await conn.close()


async def write_column(storage: dict[str, Any], row_id: str, column: str, value: str) -> None:
    assert column in ("password", "ssh_tunnel")
    if storage["STORAGE_TYPE"] == "sqlite":
        with contextlib.closing(sqlite3.connect(storage["STORAGE_SQLITE_FILEPATH"])) as db, db:
            db.execute(f"UPDATE connections SET {column} = ? WHERE id = ?", (value, row_id))
        return
    conn = await asyncpg.connect(storage["STORAGE_URL"])
    try:
        await conn.execute(f"UPDATE connections SET {column} = $1 WHERE id = $2", value, row_id)
    finally:
        await conn.close()


async def create(client: httpx.AsyncClient, server: RunningServer, **body: Any) -> str:
    payload = {"name": f"{server.kind}-{server.port}", "host": server.host, "port": server.port}
    response = await client.post("/api/connections", json={**payload, **body})
    assert response.status_code == 201, response.text
    connection_id: str = response.json()["id"]
    return connection_id


async def listed(client: httpx.AsyncClient) -> dict[str, dict[str, Any]]:
    return {c["id"]: c for c in (await client.get("/api/connections")).json()}


async def database_health(client: httpx.AsyncClient, connection_id: str) -> dict[str, Any]:
    response = await client.get("/api/health", headers={"X-Connection-Id": connection_id})
    assert response.status_code == 200, response.text
    database: dict[str, Any] = response.json()["database"]
    return database


def _as_text(value: str | None) -> str:
    return "" if value is None else value


class TestConnectionStore:
    async def test_connections_survive_a_restart(
        self, start: Restart, protected: RunningServer
    ) -> None:
        async with start() as first:
            cid = await create(first.client, protected, name="kept", password=PASSWORD, db=1)
            before = await listed(first.client)
        async with start() as second:
            after = await listed(second.client)
            health = await database_health(second.client, cid)
        assert set(after) == {"env-default", cid}
        for field in ("name", "host", "port", "db", "hasPassword", "isDefault", "createdAt"):
            assert after[cid][field] == before[cid][field]
        assert after[cid]["name"] == "kept"
        assert health["status"] == "connected"

    async def test_default_choice_survives_a_restart(
        self, start: Restart, protected: RunningServer
    ) -> None:
        async with start() as first:
            cid = await create(first.client, protected, password=PASSWORD, setAsDefault=True)
        async with start() as second:
            connections = await listed(second.client)
        assert [c for c, v in connections.items() if v["isDefault"]] == [cid]

    async def test_deleted_env_default_is_not_recreated(
        self, start: Restart, protected: RunningServer
    ) -> None:
        async with start() as first:
            cid = await create(first.client, protected, password=PASSWORD)
            assert (await first.client.delete("/api/connections/env-default")).status_code == 204
        async with start() as second:
            connections = await listed(second.client)
        assert list(connections) == [cid]
        assert connections[cid]["isDefault"] is True

    async def test_env_default_is_not_recreated_when_all_were_deleted(self, start: Restart) -> None:
        async with start() as first:
            await first.client.delete("/api/connections/env-default")
        async with start() as second:
            assert await listed(second.client) == {}

    async def test_stored_password_and_ssh_secrets_are_encrypted_with_a_key(
        self,
        start: Restart,
        persistent_storage: dict[str, Any],
        protected: RunningServer,
        sshd: RunningSshd,
        sshd_factory: SshdFactory,
    ) -> None:
        keys = sshd_factory.client_keys
        tunnel = tunnel_fields(
            sshd, privateKey=keys.encrypted_private_key, passphrase=keys.passphrase
        )
        async with start(ENCRYPTION_KEY=KEY, **SSH_LOGIN_TIMEOUTS) as first:
            cid = await create(first.client, protected, password=PASSWORD, sshTunnel=tunnel)
        row = (await stored_rows(persistent_storage))[cid]
        stored = _as_text(row["password"]) + _as_text(row["ssh_tunnel"])
        assert row["password"].startswith("v1:")
        key_line = keys.encrypted_private_key.splitlines()[1]
        for secret in (PASSWORD, sshd.password, keys.passphrase, key_line, "PRIVATE KEY"):
            assert secret not in stored
            assert secret.encode() not in stored.encode()
        async with start(ENCRYPTION_KEY=KEY, **SSH_LOGIN_TIMEOUTS) as second:
            health = await database_health(second.client, cid)
            read = (await listed(second.client))[cid]
        assert health["status"] == "connected"
        assert read["sshTunnel"]["hasPrivateKey"] is True
        assert read["sshTunnel"]["hasPassphrase"] is True
        assert read["sshTunnel"]["hasPassword"] is True

    async def test_sealed_password_copied_into_another_row_does_not_open(
        self,
        start: Restart,
        persistent_storage: dict[str, Any],
        protected: RunningServer,
        valkey_server: RunningServer,
    ) -> None:
        async with start(ENCRYPTION_KEY=KEY) as first:
            source = await create(first.client, protected, name="source", password=PASSWORD)
            # Valkey's passwordless default user accepts any password.
            target = await create(first.client, valkey_server, name="target", password="other")
        rows = await stored_rows(persistent_storage)
        await write_column(persistent_storage, target, "password", rows[source]["password"])
        async with start(ENCRYPTION_KEY=KEY) as second:
            connections = await listed(second.client)
            broken = await database_health(second.client, target)
            intact = await database_health(second.client, source)
            still_up = await second.client.get("/api/health")
        assert connections[target]["credentialError"]
        assert connections[target]["hasPassword"] is True
        assert connections[source]["credentialError"] is None
        assert broken["status"] == "disconnected"
        assert broken["error"]
        assert intact["status"] == "connected"
        assert still_up.status_code == 200

    async def test_entering_the_password_again_repairs_an_undecryptable_connection(
        self, start: Restart, persistent_storage: dict[str, Any], protected: RunningServer
    ) -> None:
        async with start(ENCRYPTION_KEY=KEY) as app:
            source = await create(app.client, protected, password=PASSWORD)
            target = await create(app.client, protected, password=PASSWORD)
            rows = await stored_rows(persistent_storage)
            await write_column(persistent_storage, target, "password", rows[source]["password"])
            refused = await app.client.put(f"/api/connections/{target}", json={"name": "x"})
            repaired = await app.client.put(
                f"/api/connections/{target}", json={"password": PASSWORD}
            )
            health = await database_health(app.client, target)
        assert refused.status_code == 409
        assert repaired.status_code == 200, repaired.text
        assert repaired.json()["credentialError"] is None
        assert health["status"] == "connected"

    async def test_startup_with_a_different_key_fails(
        self, start: Restart, protected: RunningServer
    ) -> None:
        async with start(ENCRYPTION_KEY=KEY) as first:
            await create(first.client, protected, password=PASSWORD)
        with pytest.raises(StartupError, match="ENCRYPTION_KEY"):
            async with start(ENCRYPTION_KEY=OTHER_KEY):
                pass
        async with start(ENCRYPTION_KEY=KEY) as again:
            assert (await again.client.get("/api/health")).status_code == 200

    async def test_startup_with_a_different_salt_fails(self, start: Restart) -> None:
        async with start(ENCRYPTION_KEY=KEY):
            pass
        with pytest.raises(StartupError):
            async with start(ENCRYPTION_KEY=KEY, ENCRYPTION_KEK_SALT="another-salt"):
                pass

    async def test_plain_password_is_encrypted_when_a_key_is_set(
        self,
        start: Restart,
        persistent_storage: dict[str, Any],
        protected: RunningServer,
        sshd: RunningSshd,
    ) -> None:
        tunnel = tunnel_fields(sshd)
        async with start(**SSH_LOGIN_TIMEOUTS) as first:
            cid = await create(first.client, protected, password=PASSWORD, sshTunnel=tunnel)
        before = (await stored_rows(persistent_storage))[cid]
        assert before["password"] == f"plain:{PASSWORD}"
        async with start(ENCRYPTION_KEY=KEY, **SSH_LOGIN_TIMEOUTS) as second:
            health = await database_health(second.client, cid)
        after = (await stored_rows(persistent_storage))[cid]
        assert after["password"].startswith("v1:")
        assert PASSWORD not in after["password"]
        assert sshd.password not in after["ssh_tunnel"]
        assert json.loads(after["ssh_tunnel"])["password"].startswith("v1:")
        assert health["status"] == "connected"

    async def test_reencrypting_leaves_a_secret_that_does_not_open_in_place(
        self,
        start: Restart,
        persistent_storage: dict[str, Any],
        protected: RunningServer,
        sshd: RunningSshd,
    ) -> None:
        tunnel = tunnel_fields(sshd)
        async with start(ENCRYPTION_KEY=KEY, **SSH_LOGIN_TIMEOUTS) as first:
            source = await create(first.client, protected, password=PASSWORD)
            target = await create(first.client, protected, password=PASSWORD, sshTunnel=tunnel)
        rows = await stored_rows(persistent_storage)
        foreign = rows[source]["password"]
        ssh = json.loads(rows[target]["ssh_tunnel"])
        await write_column(persistent_storage, target, "password", foreign)
        await write_column(
            persistent_storage, target, "ssh_tunnel", json.dumps({**ssh, "password": "plain:x"})
        )
        async with start(ENCRYPTION_KEY=KEY) as second:
            connections = await listed(second.client)
        assert connections[target]["credentialError"]
        assert (await stored_rows(persistent_storage))[target]["password"] == foreign


class TestPlaintextWarning:
    async def test_memory_storage_without_key_warns_once_at_startup(
        self, memory_app_factory: AppFactory, caplog: pytest.LogCaptureFixture
    ) -> None:
        with caplog.at_level(logging.WARNING):
            async with memory_app_factory() as app:
                await app.client.post(
                    "/api/connections",
                    json={"host": "127.0.0.1", "port": app.settings.DB_PORT, "password": "x"},
                )
                await app.client.get("/api/connections")
        warnings = [r for r in caplog.records if "plain text" in r.getMessage()]
        assert len(warnings) == 1
        assert warnings[0].levelno == logging.WARNING

    async def test_no_plaintext_warning_with_a_key(
        self, memory_app_factory: AppFactory, caplog: pytest.LogCaptureFixture
    ) -> None:
        with caplog.at_level(logging.WARNING):
            async with memory_app_factory(ENCRYPTION_KEY=KEY):
                pass
        assert not [r for r in caplog.records if "plain text" in r.getMessage()]
