import socket
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fixtures.app import AppFactory, RunningApp
from tests.fixtures.servers import RunningServer, ServerFactory, TlsFiles
from tests.fixtures.sshd import SSH_LOGIN_TIMEOUTS, RunningSshd, SshdFactory, tunnel_fields

PASSWORD = "s3cret-Pa55word"
ALICE_PASSWORD = "alice-Pa55word"
# Not a real key: only its text matters, and it must never come back.
PRIVATE_KEY = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\n"
    "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
    "-----END OPENSSH PRIVATE KEY-----\n"
)
SSH_PASSWORD = "bastion-Pa55word"
PASSPHRASE = "key-Pa55phrase"
SECRETS = (PASSWORD, ALICE_PASSWORD, PRIVATE_KEY.splitlines()[1], SSH_PASSWORD, PASSPHRASE)


@pytest.fixture(scope="module")
def protected(server_factory: ServerFactory) -> Iterator[RunningServer]:
    """Redis 7 that wants PASSWORD for `default` and has user alice."""
    server = server_factory.start(
        "redis7", password=PASSWORD, acl_users=[f"alice on >{ALICE_PASSWORD} ~* +@all"]
    )
    yield server
    server_factory.stop(server)


@pytest.fixture(scope="module")
def tls_server(server_factory: ServerFactory) -> Iterator[RunningServer]:
    server = server_factory.start("redis7", tls=True)
    yield server
    server_factory.stop(server)


@pytest.fixture
def closed_port() -> int:
    """A loopback port nothing listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@pytest.fixture
def hanging_port() -> Iterator[int]:
    """A loopback port that listens but never accepts: connects past the first one hang."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        port: int = listener.getsockname()[1]
        # The one queued connection fills the backlog; later SYNs are dropped unanswered.
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            yield port


def _json(response: httpx.Response) -> Any:
    return response.json()


def assert_422_names(response: httpx.Response, field: str) -> None:
    assert response.status_code == 422, response.text
    body = response.json()
    assert field in body["message"]
    assert field in body.get("fields", [body.get("field")])


async def create(client: httpx.AsyncClient, **body: Any) -> dict[str, Any]:
    response = await client.post("/api/connections", json=body)
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    return created


async def listed(client: httpx.AsyncClient) -> dict[str, dict[str, Any]]:
    response = await client.get("/api/connections")
    assert response.status_code == 200
    return {c["id"]: c for c in response.json()}


def at(server: RunningServer, **extra: Any) -> dict[str, Any]:
    return {
        "name": f"{server.kind}-{server.port}",
        "host": server.host,
        "port": server.port,
        **extra,
    }


async def health_of(client: httpx.AsyncClient, connection_id: str) -> dict[str, Any]:
    response = await client.get("/api/health", headers={"X-Connection-Id": connection_id})
    assert response.status_code == 200, response.text
    database: dict[str, Any] = response.json()["database"]
    return database


class TestListConnections:
    async def test_first_start_creates_env_default_from_db_settings(
        self, memory_app_factory: AppFactory, protected: RunningServer
    ) -> None:
        settings = {"DB_HOST": protected.host, "DB_PORT": protected.port}
        async with memory_app_factory(
            **settings, DB_USERNAME="alice", DB_PASSWORD=ALICE_PASSWORD
        ) as app:
            connections = await listed(app.client)
            health = await health_of(app.client, "env-default")
        assert list(connections) == ["env-default"]
        default = connections["env-default"]
        assert default["isDefault"] is True
        assert (default["host"], default["port"]) == (protected.host, protected.port)
        assert default["username"] == "alice"
        assert default["hasPassword"] is True
        assert health["status"] == "connected"

    async def test_lists_a_created_connection_with_has_password(
        self, api: RunningApp, protected: RunningServer
    ) -> None:
        created = await create(api.client, **at(protected, password=PASSWORD))
        connections = await listed(api.client)
        assert set(connections) == {"env-default", created["id"]}
        assert connections[created["id"]]["hasPassword"] is True
        assert connections["env-default"]["hasPassword"] is False
        assert all("password" not in c for c in connections.values())

    async def test_engine_status_shows_what_health_last_saw(self, api: RunningApp) -> None:
        # The startup check may already have seen it; after a health check it surely has.
        before = (await listed(api.client))["env-default"]["engine"]
        await health_of(api.client, "env-default")
        after = (await listed(api.client))["env-default"]["engine"]
        assert before["status"] in ("unknown", "connected")
        assert after["status"] == "connected"
        assert after["checkedAt"] >= (before["checkedAt"] or 0)
        assert after["type"] == "valkey"


class TestCreateConnection:
    async def test_answers_201_with_the_connection_and_its_id(
        self, api: RunningApp, protected: RunningServer
    ) -> None:
        response = await api.client.post(
            "/api/connections", json=at(protected, name="cache", password=PASSWORD)
        )
        assert response.status_code == 201
        body = response.json()
        assert body["id"]
        assert body["name"] == "cache"
        assert (body["host"], body["port"]) == (protected.host, protected.port)
        assert (body["username"], body["db"], body["tls"]) == ("default", 0, False)
        assert body["hasPassword"] is True
        assert body["isDefault"] is False
        assert "password" not in body
        assert PASSWORD not in response.text
        read = (await api.client.get(f"/api/connections/{body['id']}")).json()
        # The engine part may have been detected since: the poll starts at once.
        assert {k: v for k, v in read.items() if k != "engine"} == {
            k: v for k, v in body.items() if k != "engine"
        }

    async def test_created_connection_is_usable_with_its_password(
        self, api: RunningApp, protected: RunningServer
    ) -> None:
        created = await create(api.client, **at(protected, password=PASSWORD))
        health = await health_of(api.client, created["id"])
        assert health["status"] == "connected"
        assert health["type"] == "redis"

    async def test_quick_connect_url_fills_every_field(
        self, api: RunningApp, protected: RunningServer
    ) -> None:
        url = f"redis://alice:{ALICE_PASSWORD}@127.0.0.1:{protected.port}/2"
        created = await create(api.client, url=url)
        assert created["name"] == f"127.0.0.1:{protected.port}"
        assert (created["host"], created["port"]) == ("127.0.0.1", protected.port)
        assert (created["username"], created["db"], created["tls"]) == ("alice", 2, False)
        assert created["hasPassword"] is True
        assert (await health_of(api.client, created["id"]))["status"] == "connected"

    async def test_quick_connect_url_with_percent_encoded_password(
        self, api: RunningApp, server_factory: ServerFactory
    ) -> None:
        server = server_factory.start("valkey", password="p@ss:w/rd%")
        try:
            created = await create(
                api.client, url=f"redis://:p%40ss%3Aw%2Frd%25@{server.host}:{server.port}"
            )
            health = await health_of(api.client, created["id"])
        finally:
            server_factory.stop(server)
        assert health["status"] == "connected"

    async def test_rediss_url_turns_tls_on(
        self, memory_app_factory: AppFactory, tls_server: RunningServer, tls_files: TlsFiles
    ) -> None:
        async with memory_app_factory(ENGINE_TLS_CA_FILE=tls_files.ca_path) as app:
            created = await create(app.client, url=f"rediss://127.0.0.1:{tls_server.port}")
            health = await health_of(app.client, created["id"])
        assert created["tls"] is True
        assert health["status"] == "connected"

    async def test_host_given_as_host_colon_port_is_split(
        self, api: RunningApp, redis7_server: RunningServer
    ) -> None:
        created = await create(api.client, name="r7", host=f"127.0.0.1:{redis7_server.port}")
        assert (created["host"], created["port"]) == ("127.0.0.1", redis7_server.port)

    async def test_explicit_fields_win_over_the_url(
        self, api: RunningApp, protected: RunningServer
    ) -> None:
        created = await create(
            api.client,
            url=f"redis://bob:wrong@127.0.0.1:{protected.port + 1}/5",
            name="explicit",
            port=protected.port,
            username="alice",
            password=ALICE_PASSWORD,
            db=3,
        )
        assert created["name"] == "explicit"
        assert created["port"] == protected.port
        assert (created["username"], created["db"]) == ("alice", 3)
        assert (await health_of(api.client, created["id"]))["status"] == "connected"

    async def test_password_keeps_its_spaces(
        self, api: RunningApp, server_factory: ServerFactory
    ) -> None:
        server = server_factory.start("valkey", password=" padded pass ")
        try:
            response = await api.client.post(
                "/api/connections", json=at(server, password=" padded pass ")
            )
        finally:
            server_factory.stop(server)
        assert response.status_code == 201, response.text

    async def test_first_connection_after_none_becomes_default(self, api: RunningApp) -> None:
        await api.client.delete("/api/connections/env-default")
        created = await create(api.client, name="only", host="127.0.0.1", port=api.settings.DB_PORT)
        assert created["isDefault"] is True

    async def test_set_as_default_makes_it_the_default(
        self, api: RunningApp, redis7_server: RunningServer
    ) -> None:
        created = await create(api.client, **at(redis7_server, setAsDefault=True))
        connections = await listed(api.client)
        assert created["isDefault"] is True
        assert [c for c, v in connections.items() if v["isDefault"]] == [created["id"]]

    async def test_wrong_password_answers_400_with_engine_text_and_stores_nothing(
        self, api: RunningApp, protected: RunningServer
    ) -> None:
        response = await api.client.post("/api/connections", json=at(protected, password="nope"))
        assert response.status_code == 400
        assert "WRONGPASS" in response.json()["message"]
        assert list(await listed(api.client)) == ["env-default"]

    async def test_closed_port_answers_400_and_stores_nothing(
        self, api: RunningApp, closed_port: int
    ) -> None:
        response = await api.client.post(
            "/api/connections", json={"name": "dead", "host": "127.0.0.1", "port": closed_port}
        )
        assert response.status_code == 400
        assert str(closed_port) in response.json()["message"]
        assert list(await listed(api.client)) == ["env-default"]


class TestConnectionValidation:
    @pytest.mark.parametrize(
        ("body", "field"),
        [
            pytest.param({"name": "x", "host": "127.0.0.1", "port": 0}, "port", id="port-0"),
            pytest.param(
                {"name": "x", "host": "127.0.0.1", "port": 70000}, "port", id="port-70000"
            ),
            pytest.param({"name": "x", "host": "127.0.0.1", "port": "six"}, "port", id="port-word"),
            pytest.param({"name": "", "host": "127.0.0.1"}, "name", id="empty-name"),
            pytest.param({"name": "   ", "host": "127.0.0.1"}, "name", id="blank-name"),
            pytest.param({"name": "x" * 101, "host": "127.0.0.1"}, "name", id="long-name"),
            pytest.param({"url": "ftp://x"}, "url", id="url-ftp"),
            pytest.param({"url": "redis://host:notaport"}, "url", id="url-word-port"),
            pytest.param({"url": "redis://"}, "url", id="url-no-host"),
            pytest.param({"url": "redis://127.0.0.1:70000"}, "url", id="url-port-70000"),
            pytest.param({"name": "x", "host": "127.0.0.1:0"}, "host", id="host-port-0"),
            pytest.param({"name": "x", "host": "127.0.0.1:99999"}, "host", id="host-big-port"),
            pytest.param({"name": "x", "host": "user@127.0.0.1"}, "host", id="host-with-at"),
            pytest.param({"name": "x", "host": ""}, "host", id="empty-host"),
            pytest.param({"name": "x", "host": "127.0.0.1", "db": -1}, "db", id="db-negative"),
            pytest.param({"name": "x", "host": "127.0.0.1", "dbType": "x"}, "dbType", id="db-type"),
            pytest.param({"name": "x", "host": "127.0.0.1", "colour": 1}, "colour", id="unknown"),
        ],
    )
    @pytest.mark.parametrize("path", ["/api/connections", "/api/connections/test"])
    async def test_bad_input_422s_naming_the_field_and_stores_nothing(
        self, api: RunningApp, body: dict[str, Any], field: str, path: str
    ) -> None:
        response = await api.client.post(path, json=body)
        assert_422_names(response, field)
        assert list(await listed(api.client)) == ["env-default"]

    @pytest.mark.parametrize(
        ("body", "field"),
        [
            pytest.param({"name": "x"}, "host", id="no-host"),
            pytest.param(
                {"name": "x", "host": "127.0.0.1:6379", "port": 6380}, "port", id="two-ports"
            ),
        ],
    )
    async def test_rule_breaking_input_422s_naming_the_field(
        self, api: RunningApp, body: dict[str, Any], field: str
    ) -> None:
        assert_422_names(await api.client.post("/api/connections", json=body), field)
        assert list(await listed(api.client)) == ["env-default"]

    async def test_rule_422s_list_the_field_like_schema_422s(self, api: RunningApp) -> None:
        response = await api.client.post("/api/connections", json={"name": "x"})
        assert response.json().get("fields") == ["host"]


class TestTestConnection:
    @pytest.mark.parametrize(
        ("fixture", "engine", "version", "command_log"),
        [
            pytest.param("valkey_server", "valkey", "9.1.", True, id="valkey-9.1"),
            pytest.param("redis7_server", "redis", "7.0.", False, id="redis-7.0"),
            pytest.param("redis6_server", "redis", "6.2.", False, id="redis-6.2"),
        ],
    )
    async def test_reports_engine_version_and_capabilities(
        self,
        api: RunningApp,
        request: pytest.FixtureRequest,
        fixture: str,
        engine: str,
        version: str,
        command_log: bool,
    ) -> None:
        server: RunningServer = request.getfixturevalue(fixture)
        response = await api.client.post("/api/connections/test", json=at(server))
        assert response.status_code == 200
        body = response.json()
        assert body["success"] is True, body  # the body says why when it fails
        assert body["error"] is None
        assert body["type"] == engine
        assert body["version"].startswith(version)
        assert body["capabilities"]["hasCommandLog"] is command_log
        assert body["capabilities"]["hasSlotStats"] is command_log
        assert list(await listed(api.client)) == ["env-default"]

    async def test_wrong_password_reports_wrongpass(
        self, api: RunningApp, protected: RunningServer
    ) -> None:
        response = await api.client.post("/api/connections/test", json=at(protected, password="x"))
        assert response.status_code == 200
        body = response.json()
        assert body["success"] is False
        assert body["error"].startswith("WRONGPASS")
        assert body["type"] is None

    async def test_right_acl_user_and_password_succeed(
        self, api: RunningApp, protected: RunningServer
    ) -> None:
        response = await api.client.post(
            "/api/connections/test", json=at(protected, username="alice", password=ALICE_PASSWORD)
        )
        assert response.json()["success"] is True

    async def test_host_that_never_accepts_fails_within_the_connect_timeout(
        self, memory_app_factory: AppFactory, hanging_port: int
    ) -> None:
        async with memory_app_factory(ENGINE_CONNECT_TIMEOUT_MS=1000) as api:
            started = time.perf_counter()
            response = await api.client.post(
                "/api/connections/test", json={"host": "127.0.0.1", "port": hanging_port}
            )
            elapsed = time.perf_counter() - started
        assert elapsed < 3.0
        assert response.status_code == 200
        body = response.json()
        assert body["success"] is False
        assert body["errorKind"] == "timeout"
        assert f"127.0.0.1:{hanging_port}" in body["error"]

    async def test_closed_port_fails_quickly(self, api: RunningApp, closed_port: int) -> None:
        started = time.perf_counter()
        response = await api.client.post(
            "/api/connections/test", json={"host": "127.0.0.1", "port": closed_port}
        )
        assert time.perf_counter() - started < 1.0
        body = response.json()
        assert body["success"] is False
        assert body["errorKind"] == "unreachable"
        assert str(closed_port) in body["error"]


class TestTestAStoredConnection:
    """POST /api/connections/{id}/test: a PUT body tried against the stored connection."""

    async def test_an_empty_body_tries_it_with_its_stored_password(
        self, api: RunningApp, protected: RunningServer
    ) -> None:
        created = await create(api.client, **at(protected, password=PASSWORD))
        response = await api.client.post(f"/api/connections/{created['id']}/test", json={})
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["success"] is True
        assert body["type"] == "redis"
        assert not any(secret in response.text for secret in SECRETS)

    async def test_a_changed_field_is_tried_and_nothing_is_saved(
        self, api: RunningApp, protected: RunningServer, closed_port: int
    ) -> None:
        created = await create(api.client, **at(protected, password=PASSWORD))
        path = f"/api/connections/{created['id']}/test"
        wrong = (await api.client.post(path, json={"password": "nope"})).json()
        assert wrong["success"] is False
        assert wrong["error"].startswith("WRONGPASS")
        moved = (await api.client.post(path, json={"port": closed_port})).json()
        assert (moved["success"], moved["errorKind"]) == (False, "unreachable")
        # The tries changed nothing: the stored password and port still answer.
        assert (await api.client.post(path, json={})).json()["success"] is True
        stored = (await listed(api.client))[created["id"]]
        assert (stored["port"], stored["hasPassword"]) == (protected.port, True)
        assert stored["updatedAt"] == created["updatedAt"]

    async def test_a_removed_password_is_tried_without_one(
        self, api: RunningApp, protected: RunningServer
    ) -> None:
        created = await create(api.client, **at(protected, password=PASSWORD))
        response = await api.client.post(
            f"/api/connections/{created['id']}/test", json={"password": ""}
        )
        refused = response.json()
        assert refused["success"] is False
        # As a test without any password is answered: the server wants one.
        plain = await api.client.post("/api/connections/test", json=at(protected))
        assert refused["error"] == plain.json()["error"]
        assert refused["error"].split()[0] in {"NOAUTH", "WRONGPASS"}

    async def test_unknown_id_404s_and_bad_field_422s(
        self, api: RunningApp, protected: RunningServer
    ) -> None:
        missing = await api.client.post("/api/connections/no-such-id/test", json={})
        assert missing.status_code == 404
        created = await create(api.client, **at(protected, password=PASSWORD))
        assert_422_names(
            await api.client.post(f"/api/connections/{created['id']}/test", json={"port": 0}),
            "port",
        )

    async def test_a_push_connection_409s(self, api: RunningApp) -> None:
        pushed = await create(
            api.client, source="push", name="pushed", host="127.0.0.1", port=16399
        )
        response = await api.client.post(f"/api/connections/{pushed['id']}/test", json={})
        assert response.status_code == 409
        assert "never dialled" in response.json()["message"]


class TestGetConnection:
    @pytest.mark.parametrize(
        ("method", "path", "body"),
        [
            pytest.param("GET", "/api/connections/no-such-id", None, id="get"),
            pytest.param("PUT", "/api/connections/no-such-id", {"name": "x"}, id="put"),
            pytest.param("DELETE", "/api/connections/no-such-id", None, id="delete"),
            pytest.param("POST", "/api/connections/no-such-id/default", None, id="default"),
        ],
    )
    async def test_unknown_connection_id_404s_naming_it(
        self, api: RunningApp, method: str, path: str, body: dict[str, Any] | None
    ) -> None:
        response = await api.client.request(method, path, json=body)
        assert response.status_code == 404
        assert "no-such-id" in response.json()["message"]
        assert list(await listed(api.client)) == ["env-default"]


class TestUpdateConnection:
    async def test_renames_a_connection(
        self, api: RunningApp, redis7_server: RunningServer
    ) -> None:
        created = await create(api.client, **at(redis7_server))
        response = await api.client.put(
            f"/api/connections/{created['id']}", json={"name": "renamed"}
        )
        assert response.status_code == 200
        assert response.json()["name"] == "renamed"
        stored = (await listed(api.client))[created["id"]]
        assert stored["name"] == "renamed"
        assert (stored["host"], stored["port"]) == (created["host"], created["port"])
        assert stored["updatedAt"] >= created["updatedAt"]

    async def test_rename_keeps_the_password(
        self, api: RunningApp, protected: RunningServer
    ) -> None:
        created = await create(api.client, **at(protected, password=PASSWORD))
        await api.client.put(f"/api/connections/{created['id']}", json={"name": "renamed"})
        assert (await listed(api.client))[created["id"]]["hasPassword"] is True
        assert (await health_of(api.client, created["id"]))["status"] == "connected"

    async def test_renaming_a_connection_whose_server_is_down_works(
        self, api: RunningApp, server_factory: ServerFactory
    ) -> None:
        server = server_factory.start("redis6")
        created = await create(api.client, **at(server))
        server_factory.stop(server)
        response = await api.client.put(
            f"/api/connections/{created['id']}", json={"name": "renamed"}
        )
        assert response.status_code == 200
        assert response.json()["name"] == "renamed"

    async def test_moving_to_a_dead_port_answers_400_and_keeps_the_connection(
        self, api: RunningApp, redis7_server: RunningServer, closed_port: int
    ) -> None:
        created = await create(api.client, **at(redis7_server))
        response = await api.client.put(
            f"/api/connections/{created['id']}", json={"name": "moved", "port": closed_port}
        )
        assert response.status_code == 400
        stored = (await listed(api.client))[created["id"]]
        assert (stored["name"], stored["port"]) == (created["name"], redis7_server.port)

    async def test_moving_to_another_server_switches_the_engine(
        self, api: RunningApp, redis7_server: RunningServer, valkey_server: RunningServer
    ) -> None:
        created = await create(api.client, **at(redis7_server))
        assert (await health_of(api.client, created["id"]))["type"] == "redis"
        response = await api.client.put(
            f"/api/connections/{created['id']}", json={"port": valkey_server.port}
        )
        assert response.status_code == 200
        assert (await health_of(api.client, created["id"]))["type"] == "valkey"

    async def test_empty_password_clears_it(
        self, api: RunningApp, valkey_server: RunningServer
    ) -> None:
        # Valkey's passwordless default user accepts any password, so both versions answer.
        created = await create(api.client, **at(valkey_server, password="unneeded"))
        assert created["hasPassword"] is True
        response = await api.client.put(f"/api/connections/{created['id']}", json={"password": ""})
        assert response.status_code == 200
        assert response.json()["hasPassword"] is False
        assert (await listed(api.client))[created["id"]]["hasPassword"] is False

    async def test_clearing_a_needed_password_answers_400(
        self, api: RunningApp, protected: RunningServer
    ) -> None:
        created = await create(api.client, **at(protected, password=PASSWORD))
        response = await api.client.put(f"/api/connections/{created['id']}", json={"password": ""})
        assert response.status_code == 400
        assert (await listed(api.client))[created["id"]]["hasPassword"] is True

    async def test_bad_port_422s_naming_it(self, api: RunningApp) -> None:
        response = await api.client.put("/api/connections/env-default", json={"port": 0})
        assert_422_names(response, "port")


class TestSetDefaultConnection:
    async def test_flips_the_default(self, api: RunningApp, redis7_server: RunningServer) -> None:
        created = await create(api.client, **at(redis7_server))
        response = await api.client.post(f"/api/connections/{created['id']}/default")
        assert response.status_code == 200
        assert response.json()["isDefault"] is True
        connections = await listed(api.client)
        assert [c for c, v in connections.items() if v["isDefault"]] == [created["id"]]

    async def test_requests_without_header_use_the_new_default(
        self, api: RunningApp, redis7_server: RunningServer
    ) -> None:
        created = await create(api.client, **at(redis7_server))
        await api.client.post(f"/api/connections/{created['id']}/default")
        database = (await api.client.get("/api/health")).json()["database"]
        assert database["connectionId"] == created["id"]
        assert database["type"] == "redis"


class TestDeleteConnection:
    async def test_answers_204_and_the_connection_is_gone(
        self, api: RunningApp, redis7_server: RunningServer
    ) -> None:
        created = await create(api.client, **at(redis7_server))
        response = await api.client.delete(f"/api/connections/{created['id']}")
        assert response.status_code == 204
        assert response.content == b""
        assert (await api.client.get(f"/api/connections/{created['id']}")).status_code == 404
        assert list(await listed(api.client)) == ["env-default"]

    async def test_deleting_the_default_makes_the_oldest_remaining_default(
        self, api: RunningApp, redis7_server: RunningServer, redis6_server: RunningServer
    ) -> None:
        older = await create(api.client, **at(redis7_server))
        newer = await create(api.client, **at(redis6_server, setAsDefault=True))
        await api.client.delete("/api/connections/env-default")
        await api.client.post(f"/api/connections/{newer['id']}/default")
        await api.client.delete(f"/api/connections/{newer['id']}")
        connections = await listed(api.client)
        assert list(connections) == [older["id"]]
        assert connections[older["id"]]["isDefault"] is True

    async def test_deleting_another_keeps_the_default(
        self, api: RunningApp, redis7_server: RunningServer
    ) -> None:
        created = await create(api.client, **at(redis7_server))
        await api.client.delete(f"/api/connections/{created['id']}")
        assert (await listed(api.client))["env-default"]["isDefault"] is True

    async def test_deleting_the_last_connection_leaves_health_answering(
        self, api: RunningApp
    ) -> None:
        await api.client.delete("/api/connections/env-default")
        response = await api.client.get("/api/health")
        assert response.status_code == 200
        assert response.json()["database"]["status"] == "disconnected"


class TestConnectionHeader:
    async def test_unknown_x_connection_id_404s_naming_it(self, api: RunningApp) -> None:
        response = await api.client.get("/api/health", headers={"X-Connection-Id": "ghost-42"})
        assert response.status_code == 404
        assert "ghost-42" in response.json()["message"]

    async def test_deleted_connection_id_404s(
        self, api: RunningApp, redis7_server: RunningServer
    ) -> None:
        created = await create(api.client, **at(redis7_server))
        await api.client.delete(f"/api/connections/{created['id']}")
        response = await api.client.get("/api/health", headers={"X-Connection-Id": created["id"]})
        assert response.status_code == 404


class TestSshTunnel:
    """The sshTunnel fields' rules; the tunnel at work is tests/connections/test_ssh_tunnel.py.
    A connection is tested through its tunnel before it is saved, so the valid ones here go
    through a real sshd."""

    @pytest.fixture
    def key_dir(self, tmp_path: Path, sshd_factory: SshdFactory) -> Path:
        directory = tmp_path / "keys"
        directory.mkdir()
        key = directory / "id_ed25519"
        key.write_text(sshd_factory.client_keys.private_key)
        key.chmod(0o600)
        (tmp_path / "outside").write_text(PRIVATE_KEY)
        (directory / "escape").symlink_to(tmp_path / "outside")
        return directory

    @pytest.fixture
    async def keyed_api(
        self, memory_app_factory: AppFactory, key_dir: Path
    ) -> AsyncIterator[RunningApp]:
        async with memory_app_factory(SVC_SSH_KEY_DIR=key_dir, **SSH_LOGIN_TIMEOUTS) as app:
            yield app

    @pytest.fixture
    async def ssh_api(self, memory_app_factory: AppFactory) -> AsyncIterator[RunningApp]:
        async with memory_app_factory(**SSH_LOGIN_TIMEOUTS) as app:
            yield app

    @staticmethod
    def tunnel(**fields: Any) -> dict[str, Any]:
        """A tunnel refused before anything is dialled."""
        return {"host": "127.0.0.1", "port": 22, "username": "jump", **fields}

    async def test_key_path_inside_the_key_dir_is_stored(
        self, keyed_api: RunningApp, valkey_server: RunningServer, sshd: RunningSshd
    ) -> None:
        tunnel = tunnel_fields(sshd, password=None, privateKeyPath="id_ed25519")
        created = await create(keyed_api.client, **at(valkey_server, sshTunnel=tunnel))
        assert created["sshTunnel"]["privateKeyPath"] == "id_ed25519"
        assert created["sshTunnel"]["authMethod"] == "privateKey"
        assert created["sshTunnel"]["hasPrivateKey"] is False

    @pytest.mark.parametrize("path", ["../outside", "/etc/passwd", "sub/../../outside", "escape"])
    async def test_key_path_escaping_the_key_dir_422s(
        self, keyed_api: RunningApp, valkey_server: RunningServer, path: str
    ) -> None:
        response = await keyed_api.client.post(
            "/api/connections", json=at(valkey_server, sshTunnel=self.tunnel(privateKeyPath=path))
        )
        assert_422_names(response, "sshTunnel.privateKeyPath")
        assert list(await listed(keyed_api.client)) == ["env-default"]

    async def test_key_path_without_key_dir_422s(
        self, api: RunningApp, valkey_server: RunningServer
    ) -> None:
        response = await api.client.post(
            "/api/connections", json=at(valkey_server, sshTunnel=self.tunnel(privateKeyPath="k"))
        )
        assert_422_names(response, "sshTunnel.privateKeyPath")
        assert "SVC_SSH_KEY_DIR" in response.json()["message"]

    async def test_bad_fingerprint_422s_naming_it(
        self, api: RunningApp, valkey_server: RunningServer
    ) -> None:
        response = await api.client.post(
            "/api/connections",
            json=at(valkey_server, sshTunnel=self.tunnel(hostKeyFingerprint="MD5:ab:cd")),
        )
        assert_422_names(response, "sshTunnel.hostKeyFingerprint")

    @pytest.mark.parametrize(
        ("fields", "named"),
        [
            ({"authMethod": "password"}, "sshTunnel.password"),
            ({"authMethod": "keyboard-interactive"}, "sshTunnel.password"),
            ({"authMethod": "privateKey", "password": "x"}, "sshTunnel.privateKey"),
            ({"privateKey": PRIVATE_KEY, "privateKeyPath": "k"}, "sshTunnel.privateKey"),
            ({"authMethod": "smartcard", "password": "x"}, "sshTunnel.authMethod"),
        ],
    )
    async def test_a_method_without_its_secret_422s_naming_the_field(
        self,
        api: RunningApp,
        valkey_server: RunningServer,
        fields: dict[str, Any],
        named: str,
    ) -> None:
        response = await api.client.post(
            "/api/connections", json=at(valkey_server, sshTunnel=self.tunnel(**fields))
        )
        assert_422_names(response, named)

    async def test_inline_key_is_stored_but_never_returned(
        self,
        ssh_api: RunningApp,
        valkey_server: RunningServer,
        sshd: RunningSshd,
        sshd_factory: SshdFactory,
    ) -> None:
        keys = sshd_factory.client_keys
        tunnel = tunnel_fields(
            sshd, privateKey=keys.encrypted_private_key, passphrase=keys.passphrase
        )
        response = await ssh_api.client.post(
            "/api/connections", json=at(valkey_server, sshTunnel=tunnel)
        )
        assert response.status_code == 201, response.text
        read = response.json()["sshTunnel"]
        assert read["hasPrivateKey"] is True
        assert read["hasPassphrase"] is True
        assert read["hasPassword"] is True
        assert "privateKey" not in read
        listed_text = (await ssh_api.client.get("/api/connections")).text
        for text in (response.text, listed_text):
            assert "PRIVATE KEY" not in text
            assert keys.passphrase not in text
            assert sshd.password not in text

    async def test_edit_without_secrets_keeps_the_stored_ones(
        self,
        ssh_api: RunningApp,
        valkey_server: RunningServer,
        sshd: RunningSshd,
        sshd_factory: SshdFactory,
    ) -> None:
        tunnel = tunnel_fields(sshd, password=None, privateKey=sshd_factory.client_keys.private_key)
        created = await create(ssh_api.client, **at(valkey_server, sshTunnel=tunnel))
        # The edit is tested through the tunnel too: it logs in with the kept key.
        response = await ssh_api.client.put(
            f"/api/connections/{created['id']}",
            json={"name": "renamed", "sshTunnel": tunnel_fields(sshd, password=None)},
        )
        assert response.status_code == 200, response.text
        assert response.json()["sshTunnel"]["hasPrivateKey"] is True
        assert response.json()["sshTunnel"]["authMethod"] == "privateKey"


class TestNoSecretInAnyResponse:
    async def test_no_endpoint_ever_returns_a_password_or_key(
        self,
        memory_app_factory: AppFactory,
        protected: RunningServer,
        sshd: RunningSshd,
        sshd_factory: SshdFactory,
    ) -> None:
        seen: list[str] = []

        async def record(response: httpx.Response) -> None:
            await response.aread()
            seen.append(f"{response.request.method} {response.request.url}\n{response.text}")

        keys = sshd_factory.client_keys
        tunnel = tunnel_fields(
            sshd, privateKey=keys.encrypted_private_key, passphrase=keys.passphrase
        )
        secrets = (
            *SECRETS,
            sshd.password,
            keys.passphrase,
            keys.encrypted_private_key.splitlines()[1],
        )
        async with memory_app_factory(
            DB_HOST=protected.host,
            DB_PORT=protected.port,
            DB_PASSWORD=PASSWORD,
            **SSH_LOGIN_TIMEOUTS,
        ) as app:
            client = app.client
            client.event_hooks["response"].append(record)
            created = await create(client, **at(protected, password=PASSWORD, sshTunnel=tunnel))
            cid = created["id"]
            alice = {"username": "alice", "password": ALICE_PASSWORD}
            url = f"redis://alice:{ALICE_PASSWORD}@127.0.0.1:{protected.port}/1"
            await client.post("/api/connections", json={"url": url})
            await client.post("/api/connections/test", json=at(protected, password=PASSWORD))
            await client.post("/api/connections/test", json=at(protected, password=PASSWORD + "x"))
            await client.post("/api/connections", json=at(protected, password=ALICE_PASSWORD))
            await client.post("/api/connections", json=at(protected, port=0, password=PASSWORD))
            await client.post("/api/connections", json={"url": url.replace("/1", "/x")})
            await client.post("/api/connections", json={"url": f"ftp://u:{PASSWORD}@h"})
            await client.get("/api/connections")
            await client.get(f"/api/connections/{cid}")
            await client.put(f"/api/connections/{cid}", json={"name": "renamed"})
            await client.put(f"/api/connections/{cid}", json=alice)
            await client.put(f"/api/connections/{cid}", json={"password": "wrong"})
            await client.post(f"/api/connections/{cid}/default")
            for path in ("/health", "/api/health", "/api/version", "/api/openapi.json"):
                await client.get(path)
            await client.get("/api/health", headers={"X-Connection-Id": cid})
            await client.delete(f"/api/connections/{cid}")
        assert len(seen) >= 20
        for text in seen:
            for secret in secrets:
                assert secret not in text, text


class TestConnectionsOnEveryBackend:
    async def test_create_edit_default_delete_round_trip(
        self, app_factory: AppFactory, protected: RunningServer
    ) -> None:
        async with app_factory() as app:
            created = await create(app.client, **at(protected, password=PASSWORD))
            cid = created["id"]
            renamed = await app.client.put(f"/api/connections/{cid}", json={"name": "renamed"})
            made_default = await app.client.post(f"/api/connections/{cid}/default")
            after_edit = await listed(app.client)
            health = (await app.client.get("/api/health")).json()["database"]
            deleted = await app.client.delete(f"/api/connections/{cid}")
            after_delete = await listed(app.client)
        assert renamed.status_code == 200
        assert made_default.status_code == 200
        assert after_edit[cid]["name"] == "renamed"
        assert after_edit[cid]["hasPassword"] is True
        assert [c for c, v in after_edit.items() if v["isDefault"]] == [cid]
        assert (health["connectionId"], health["status"]) == (cid, "connected")
        assert deleted.status_code == 204
        assert list(after_delete) == ["env-default"]
        assert after_delete["env-default"]["isDefault"] is True

    async def test_refused_connections_store_nothing(
        self, app_factory: AppFactory, protected: RunningServer
    ) -> None:
        async with app_factory() as app:
            wrong = await app.client.post("/api/connections", json=at(protected, password="no"))
            invalid = await app.client.post("/api/connections", json=at(protected, port=0))
            connections = await listed(app.client)
        assert (wrong.status_code, invalid.status_code) == (400, 422)
        assert list(connections) == ["env-default"]


class TestMissingCommands:
    async def test_test_result_and_connection_read_report_renamed_commands_missing(
        self, api: RunningApp, server_factory: ServerFactory
    ) -> None:
        server = server_factory.start(
            "valkey", config={"rename-command": ['CONFIG ""', 'SLOWLOG ""']}
        )
        try:
            tested = await api.client.post("/api/connections/test", json=at(server))
            created = await create(api.client, **at(server))
            await health_of(api.client, created["id"])  # checked, so detected
            read = await api.client.get(f"/api/connections/{created['id']}")
        finally:
            server_factory.stop(server)
        for capabilities in (tested.json()["capabilities"], read.json()["engine"]["capabilities"]):
            assert (
                capabilities["hasConfig"],
                capabilities["hasSlowLog"],
                capabilities["hasMonitor"],
                capabilities["hasAclLog"],
            ) == (False, False, True, True)
