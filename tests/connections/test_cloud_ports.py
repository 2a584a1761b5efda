"""Cloud mode's direct-connection ports (kit/cloud_ports.py): the rule at its edges, and
what the API answers for polled, pushed and self-hosted connections."""

from typing import Any

import httpx
import pytest
from pydantic import SecretStr

from svc_monitor.config import Settings
from svc_monitor.kit.cloud_ports import dialled_in_cloud
from tests.fixtures.app import AppFactory, RunningApp, target_of
from tests.fixtures.cloud import relay
from tests.fixtures.servers import RunningServer

ALLOWED = [443, 2000, 2374, 2377, 2378, 2381, 2999, 6000, 6442, 6444, 6999]
REFUSED = [442, 444, 1999, 3000, 2375, 2376, 2379, 2380, 5999, 6443, 7000]


class TestRule:
    @pytest.mark.parametrize("port", ALLOWED)
    def test_dialled(self, port: int):
        assert dialled_in_cloud(port)

    @pytest.mark.parametrize("port", REFUSED)
    def test_not_dialled(self, port: int):
        assert not dialled_in_cloud(port)


def assert_refused_port(response: httpx.Response, port: int, field: str = "port") -> None:
    assert response.status_code == 422, response.text
    body = response.json()
    assert body["message"].startswith(f"{field}: {port} ")
    assert "other ports need the agent (outbound 443)" in body["message"]
    assert field in body.get("fields", [body.get("field")])


async def ids(app: RunningApp) -> set[str]:
    response = await app.client.get("/api/connections")
    return {c["id"] for c in response.json()}


@pytest.fixture
async def cloud(cloud_app_factory: AppFactory) -> Any:
    async with cloud_app_factory() as running:
        yield running


class TestCloudCreate:
    @pytest.mark.parametrize("port", [442, 1999, 2375, 2380, 5999, 6443, 7000])
    async def test_a_port_outside_the_rule_is_422_naming_port_and_the_agent(
        self, cloud: RunningApp, port: int
    ):
        before = await ids(cloud)
        response = await cloud.client.post(
            "/api/connections", json={"host": "127.0.0.1", "port": port}
        )
        assert_refused_port(response, port)
        assert await ids(cloud) == before

    @pytest.mark.parametrize(
        "body",
        [
            pytest.param({"url": "redis://127.0.0.1:7000"}, id="url"),
            pytest.param({"host": "127.0.0.1:7000"}, id="host-port"),
        ],
    )
    async def test_the_port_of_a_url_or_host_counts(self, cloud: RunningApp, body: dict[str, Any]):
        response = await cloud.client.post("/api/connections", json=body)
        assert_refused_port(response, 7000)

    async def test_a_url_without_a_port_is_6379_and_dialled(self, cloud: RunningApp):
        response = await cloud.client.post(
            "/api/connections/test", json={"url": "redis://127.0.0.1"}
        )
        assert response.status_code == 200, response.text

    async def test_an_instance_on_an_allowed_port_is_added(
        self, cloud: RunningApp, cloud_valkey: RunningServer
    ):
        response = await cloud.client.post(
            "/api/connections",
            json={"name": "relayed", "host": cloud_valkey.host, "port": cloud_valkey.port},
        )
        assert response.status_code == 201, response.text
        assert response.json()["port"] == cloud_valkey.port

    async def test_a_bastion_port_outside_the_rule_is_422(self, cloud: RunningApp):
        tunnel = {"host": "127.0.0.1", "port": 22, "username": "ops", "password": "pw"}
        response = await cloud.client.post(
            "/api/connections", json={"host": "10.0.0.12", "port": 6379, "sshTunnel": tunnel}
        )
        assert_refused_port(response, 22, field="sshTunnel.port")

    async def test_a_push_connection_takes_any_port(self, cloud: RunningApp):
        response = await cloud.client.post(
            "/api/connections", json={"source": "push", "host": "10.0.0.12", "port": 7000}
        )
        assert response.status_code == 201, response.text
        pushed = response.json()["id"]
        renamed = await cloud.client.put(f"/api/connections/{pushed}", json={"port": 7001})
        assert renamed.status_code == 200, renamed.text


class TestCloudTest:
    @pytest.mark.parametrize("port", [2376, 2379, 6443, 7000])
    async def test_testing_a_body_on_a_refused_port_is_422(self, cloud: RunningApp, port: int):
        response = await cloud.client.post(
            "/api/connections/test", json={"host": "127.0.0.1", "port": port}
        )
        assert_refused_port(response, port)

    async def test_testing_an_allowed_port_dials_it(
        self, cloud: RunningApp, cloud_valkey: RunningServer
    ):
        response = await cloud.client.post(
            "/api/connections/test", json={"host": cloud_valkey.host, "port": cloud_valkey.port}
        )
        assert response.status_code == 200, response.text
        assert response.json()["success"] is True


class TestCloudEdit:
    async def test_moving_a_connection_to_a_refused_port_is_422_and_keeps_it(
        self, cloud: RunningApp, cloud_valkey: RunningServer
    ):
        response = await cloud.client.put("/api/connections/env-default", json={"port": 6443})
        assert_refused_port(response, 6443)
        stored = await cloud.client.get("/api/connections/env-default")
        assert stored.json()["port"] == cloud_valkey.port

    async def test_testing_a_change_to_a_refused_port_is_422(self, cloud: RunningApp):
        response = await cloud.client.post("/api/connections/env-default/test", json={"port": 2380})
        assert_refused_port(response, 2380)

    async def test_a_rename_is_not_a_dial(self, cloud: RunningApp):
        response = await cloud.client.put("/api/connections/env-default", json={"name": "main"})
        assert response.status_code == 200, response.text


class TestDefaultFromEnvironment:
    @pytest.mark.parametrize("port", [6443, 7000])
    def test_a_db_port_outside_the_rule_refuses_to_start(self, port: int):
        with pytest.raises(ValueError, match="DB_PORT") as refused:
            Settings(
                _env_file=None, CLOUD_MODE=True, OTEL_INGEST_TOKEN=SecretStr("t"), DB_PORT=port
            )
        assert "other ports need the agent (outbound 443)" in str(refused.value)

    def test_the_default_db_port_is_dialled(self):
        assert (
            Settings(_env_file=None, CLOUD_MODE=True, OTEL_INGEST_TOKEN=SecretStr("t")).DB_PORT
            == 6379
        )


class TestSelfHosted:
    async def test_any_port_is_taken(
        self, memory_app_factory: AppFactory, valkey_server: RunningServer
    ):
        with relay(valkey_server, low=7000, high=7999) as relayed:
            assert not dialled_in_cloud(relayed.port)
            async with memory_app_factory(**target_of(relayed)) as app:
                tested = await app.client.post(
                    "/api/connections/test", json={"host": relayed.host, "port": relayed.port}
                )
                assert tested.status_code == 200, tested.text
                assert tested.json()["success"] is True
                created = await app.client.post(
                    "/api/connections",
                    json={"name": "on-7xxx", "host": relayed.host, "port": relayed.port},
                )
                assert created.status_code == 201, created.text
