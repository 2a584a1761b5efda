"""In production (NODE_ENV=production, the default) private targets are refused when a
webhook is saved AND when each delivery is made; queued deliveries survive a restart."""

import asyncio
import socket
from pathlib import Path
from typing import Any

import pytest

from svc_monitor.event_types.instance import InstanceDown
from tests.fixtures.app import RunningApp, make_settings, running_app, target_of
from tests.fixtures.receiver import Answer, Receiver
from tests.fixtures.servers import RunningServer
from tests.fixtures.waiting import eventually

# A real name that this machine's /etc/hosts maps to loopback (no DNS here to fake one).
LOCAL_NAME = socket.gethostname()

PRIVATE_TARGETS = [
    pytest.param("https://127.0.0.1/hook", id="loopback"),
    pytest.param("https://localhost/hook", id="localhost"),
    pytest.param("https://10.1.2.3/hook", id="10-x"),
    pytest.param("https://172.16.0.1/hook", id="172-16-x"),
    pytest.param("https://192.168.1.1/hook", id="192-168-x"),
    pytest.param("https://169.254.169.254/latest/meta-data/", id="metadata"),
    pytest.param("https://[::1]/hook", id="ipv6-loopback"),
    pytest.param("https://[fd00::1]/hook", id="ipv6-unique-local"),
    pytest.param("https://[::ffff:127.0.0.1]/hook", id="ipv4-mapped"),
    pytest.param("https://2130706433/hook", id="decimal"),
    pytest.param("https://0x7f.1/hook", id="hex-short"),
    pytest.param("https://0/hook", id="zero"),
    pytest.param(f"https://{LOCAL_NAME}/hook", id="name-resolving-to-loopback"),
]


def settings_for(server: RunningServer, db: Path, **overrides: Any) -> Any:
    return make_settings(
        **target_of(server),
        STORAGE_TYPE="sqlite",
        STORAGE_SQLITE_FILEPATH=str(db),
        **overrides,
    )


async def add_hook(app: RunningApp, target: str, **overrides: Any) -> dict[str, Any]:
    body = {"name": "ops", "url": target, "events": ["instance.down"], **overrides}
    answer = await app.client.post("/api/webhooks", json=body)
    assert answer.status_code == 201, answer.text
    hook: dict[str, Any] = answer.json()
    return hook


async def publish_down(app: RunningApp) -> None:
    connection = (await app.client.get("/api/connections")).json()[0]["id"]
    app.services.bus.publish(
        InstanceDown(connection_id=connection, reason="unreachable", message="refused")
    )


async def first_delivery(app: RunningApp, hook: dict[str, Any], status: str) -> dict[str, Any]:
    async def reached() -> bool:
        rows = (await app.client.get(f"/api/webhooks/{hook['id']}/deliveries")).json()
        return bool(rows) and rows[0]["status"] == status

    await eventually(reached, within=15)
    rows: list[dict[str, Any]] = (
        await app.client.get(f"/api/webhooks/{hook['id']}/deliveries")
    ).json()
    return rows[0]


class TestRefusedWhenSaved:
    @pytest.mark.parametrize("target", PRIVATE_TARGETS)
    async def test_private_target(self, valkey_server: RunningServer, target: str) -> None:
        settings = make_settings(**target_of(valkey_server), NODE_ENV="production")
        async with running_app(settings) as app:
            answer = await add_hook_raw(app, target)
            assert answer.status_code == 422, answer.text
            assert answer.json()["message"].startswith("url")
            assert (await app.client.get("/api/webhooks")).json() == []

    async def test_the_name_really_resolves_to_loopback(self) -> None:
        infos = await asyncio.get_running_loop().getaddrinfo(LOCAL_NAME, 443)
        assert {info[4][0] for info in infos} <= {"127.0.0.1", "127.0.1.1", "::1"}


async def add_hook_raw(app: RunningApp, target: str) -> Any:
    body = {"name": "ops", "url": target, "events": ["instance.down"]}
    return await app.client.post("/api/webhooks", json=body)


class TestRefusedWhenSent:
    @pytest.mark.parametrize("host", ["127.0.0.1", LOCAL_NAME], ids=["literal", "name"])
    async def test_target_saved_in_development_fails_in_production(
        self, valkey_server: RunningServer, tmp_path: Path, receiver: Receiver, host: str
    ) -> None:
        db = tmp_path / "svc.db"
        port = receiver.base_url.rsplit(":", 1)[1]
        async with running_app(settings_for(valkey_server, db, NODE_ENV="development")) as dev:
            hook = await add_hook(dev, f"https://{host}:{port}/hook")
        async with running_app(settings_for(valkey_server, db, NODE_ENV="production")) as prod:
            await publish_down(prod)
            record = await first_delivery(prod, hook, "failed")
        assert "refused" in record["error"]
        assert "loopback" in record["error"]
        assert record["attempts"] == 1  # permanent: not retried
        assert receiver.requests == []


class TestRestart:
    async def test_a_retry_pending_at_shutdown_is_delivered_after_restart(
        self, valkey_server: RunningServer, tmp_path: Path, receiver: Receiver
    ) -> None:
        db = tmp_path / "svc.db"
        receiver.script = [Answer(500)]
        settings = settings_for(valkey_server, db, NODE_ENV="development")
        async with running_app(settings) as first:
            policy = {"maxRetries": 3, "initialDelayMs": 1500}
            hook = await add_hook(
                first, receiver.url(), secret="0123456789abcdef", retryPolicy=policy
            )
            await publish_down(first)
            await first_delivery(first, hook, "retrying")
        assert len(receiver.requests) == 1
        async with running_app(settings) as second:
            record = await first_delivery(second, hook, "success")
        assert record["attempts"] == 2
        assert len(receiver.requests) == 2
        assert receiver.requests[1].verified("0123456789abcdef")
        first_id = receiver.requests[0].headers["X-Webhook-Delivery-Id"]
        assert receiver.requests[1].headers["X-Webhook-Delivery-Id"] == first_id == record["id"]
