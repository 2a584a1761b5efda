"""Deliveries as a receiver and an operator see them: the envelope and headers, the retry
schedule, dead letters, manual retries, timeouts, truncation, redirects, isolation."""

import asyncio
import itertools
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from svc_monitor.event_types.access import AclDenied
from svc_monitor.event_types.instance import InstanceDown
from tests.fixtures.app import AppFactory, RunningApp
from tests.fixtures.receiver import Answer, Receiver, running_receiver
from tests.fixtures.waiting import eventually

SECRET = "s3cret-for-signing-0123456789"


@pytest.fixture
async def dev(memory_app_factory: AppFactory) -> AsyncIterator[RunningApp]:
    async with memory_app_factory(NODE_ENV="development") as running:
        yield running


async def add_hook(app: RunningApp, target: str, **overrides: Any) -> dict[str, Any]:
    body = {"name": "ops", "url": target, "events": ["instance.down"], "secret": SECRET}
    answer = await app.client.post("/api/webhooks", json={**body, **overrides})
    assert answer.status_code == 201, answer.text
    hook: dict[str, Any] = answer.json()
    return hook


async def connection_id(app: RunningApp) -> str:
    connections = (await app.client.get("/api/connections")).json()
    return str(connections[0]["id"])


async def instance_down(app: RunningApp) -> None:
    """What the health poll publishes when a connection stops answering."""
    app.services.bus.publish(
        InstanceDown(
            connection_id=await connection_id(app), reason="unreachable", message="refused"
        )
    )


async def deliveries(app: RunningApp, hook: dict[str, Any]) -> list[dict[str, Any]]:
    answer = await app.client.get(f"/api/webhooks/{hook['id']}/deliveries")
    assert answer.status_code == 200
    rows: list[dict[str, Any]] = answer.json()
    return rows


async def settled(app: RunningApp, hook: dict[str, Any], status: str) -> dict[str, Any]:
    async def done() -> bool:
        rows = await deliveries(app, hook)
        return bool(rows) and rows[0]["status"] == status

    await eventually(done, within=15)
    return (await deliveries(app, hook))[0]


class TestEnvelope:
    async def test_receiver_sees_the_specs_request(
        self, dev: RunningApp, receiver: Receiver
    ) -> None:
        hook = await add_hook(dev, receiver.url("/in"), headers={"X-Team": "ops"})
        await instance_down(dev)
        await receiver.wait_for(1)
        sent = receiver.requests[0]
        assert sent.verified(SECRET)
        assert not sent.verified("another-secret")
        headers = sent.headers
        assert headers["Content-Type"] == "application/json"
        assert headers["User-Agent"] == "Svc-Monitor/1.0"
        assert headers["X-Webhook-Id"] == hook["id"]
        assert headers["X-Webhook-Event"] == "instance.down"
        assert headers["X-Team"] == "ops"
        envelope = sent.json
        assert headers["X-Webhook-Delivery-Id"] == envelope["id"]
        assert envelope["event"] == "instance.down"
        assert abs(envelope["timestamp"] - time.time() * 1000) < 10_000
        assert set(envelope["instance"]) >= {"host", "port"}
        assert envelope["data"]["reason"] == "unreachable"
        assert envelope["data"]["detectedAt"].endswith("Z")
        record = await settled(dev, hook, "success")
        assert record["attempts"] == 1
        assert record["statusCode"] == 200
        assert record["eventType"] == "instance.down"
        assert record["completedAt"] is not None

    async def test_disabled_and_other_connections_webhooks_get_nothing(
        self, dev: RunningApp, receiver: Receiver
    ) -> None:
        await add_hook(dev, receiver.url("/off"), enabled=False)
        await dev.client.post(
            "/api/webhooks",
            json={"name": "x", "url": receiver.url("/other"), "events": ["instance.down"]},
        )
        other = await dev.client.post(
            "/api/connections", json={"name": "other", "host": "127.0.0.1", "port": 9}
        )
        if other.status_code == 201:  # scoped to a connection that is not the one down
            await dev.client.post(
                "/api/webhooks",
                json={"name": "s", "url": receiver.url("/scoped"), "events": ["instance.down"]},
                headers={"X-Connection-Id": other.json()["id"]},
            )
        await instance_down(dev)
        await receiver.wait_for(1, path="/other")
        await asyncio.sleep(0.3)
        assert receiver.on("/off") == []
        assert receiver.on("/scoped") == []


class TestRetries:
    async def test_two_failures_then_success_on_schedule(
        self, dev: RunningApp, receiver: Receiver
    ) -> None:
        receiver.script = [Answer(500), Answer(500), Answer(200)]
        policy = {"maxRetries": 3, "initialDelayMs": 500, "backoffMultiplier": 2}
        hook = await add_hook(dev, receiver.url(), retryPolicy=policy)
        await instance_down(dev)
        await receiver.wait_for(3, within=10)
        arrivals = [r.at for r in receiver.requests]
        for gap, expected in zip(
            [b - a for a, b in itertools.pairwise(arrivals)], [0.5, 1.0], strict=True
        ):
            assert expected * 0.8 <= gap <= expected * 1.2, (gap, expected)
        record = await settled(dev, hook, "success")
        assert record["attempts"] == 3
        ids = {r.headers["X-Webhook-Delivery-Id"] for r in receiver.requests}
        assert ids == {record["id"]}  # one delivery, attempted three times
        assert len({r.headers["X-Webhook-Timestamp"] for r in receiver.requests}) == 3
        assert all(r.verified(SECRET) for r in receiver.requests)

    async def test_always_failing_ends_in_dead_letter_then_manual_retry(
        self, dev: RunningApp, receiver: Receiver
    ) -> None:
        receiver.default = Answer(502, body="bad gateway")
        policy = {"maxRetries": 2, "initialDelayMs": 100, "backoffMultiplier": 2}
        hook = await add_hook(dev, receiver.url(), retryPolicy=policy)
        await instance_down(dev)
        record = await settled(dev, hook, "dead_letter")
        assert record["attempts"] == 3
        assert len(receiver.requests) == 3  # 1 + maxRetries
        assert record["statusCode"] == 502
        assert record["responseBody"] == "bad gateway"
        stats = (await dev.client.get("/api/webhooks/stats/retry-queue")).json()
        assert stats == {"pendingRetries": 0, "nextRetryTime": None}

        receiver.default = Answer(200)
        retried = await dev.client.post(f"/api/webhooks/deliveries/{record['id']}/retry")
        assert retried.status_code == 202
        assert retried.json() == {"message": "Retry queued"}
        record = await settled(dev, hook, "success")
        assert record["attempts"] == 4
        again = await dev.client.post(f"/api/webhooks/deliveries/{record['id']}/retry")
        assert again.status_code == 409
        missing = await dev.client.post("/api/webhooks/deliveries/nope/retry")
        assert missing.status_code == 404

    async def test_queue_stats_show_a_waiting_retry(
        self, dev: RunningApp, receiver: Receiver
    ) -> None:
        receiver.default = Answer(500)
        policy = {"maxRetries": 1, "initialDelayMs": 60_000}
        hook = await add_hook(dev, receiver.url(), retryPolicy=policy)
        await instance_down(dev)
        await settled(dev, hook, "retrying")
        stats = (await dev.client.get("/api/webhooks/stats/retry-queue")).json()
        assert stats["pendingRetries"] == 1
        assert 50_000 < stats["nextRetryTime"] - time.time() * 1000 <= 60_000


class TestReceiverMisbehaving:
    async def test_a_hanging_receiver_times_out(self, dev: RunningApp, receiver: Receiver) -> None:
        receiver.default = Answer(200, delay_s=3)
        hook = await add_hook(
            dev,
            receiver.url(),
            deliveryConfig={"timeoutMs": 1000},
            retryPolicy={"maxRetries": 0},
        )
        await instance_down(dev)
        record = await settled(dev, hook, "dead_letter")
        assert record["statusCode"] is None
        assert "1000 ms" in record["error"]
        assert 900 <= record["durationMs"] < 2500

    async def test_long_response_is_stored_truncated(
        self, dev: RunningApp, receiver: Receiver
    ) -> None:
        receiver.default = Answer(200, body="x" * 50_000)
        hook = await add_hook(dev, receiver.url(), deliveryConfig={"maxResponseBodyBytes": 1000})
        await instance_down(dev)
        record = await settled(dev, hook, "success")
        assert record["responseBody"] == "x" * 1000

    async def test_redirects_are_not_followed(self, dev: RunningApp, receiver: Receiver) -> None:
        metadata = "http://169.254.169.254/latest/meta-data/"
        receiver.script = [Answer(302, headers={"Location": metadata})]
        receiver.default = Answer(302, headers={"Location": receiver.url("/elsewhere")})
        hook = await add_hook(dev, receiver.url("/start"), retryPolicy={"maxRetries": 1})
        await instance_down(dev)
        record = await settled(dev, hook, "dead_letter")
        assert record["statusCode"] == 302
        assert record["error"] is None
        assert record["durationMs"] < 1000  # answered by the receiver, not a metadata service
        assert [r.path for r in receiver.requests] == ["/start", "/start"]

    async def test_a_slow_receiver_does_not_delay_another(
        self, dev: RunningApp, receiver: Receiver
    ) -> None:
        async with running_receiver() as slow:
            slow.default = Answer(200, delay_s=5)
            await add_hook(dev, slow.url(), name="slow")
            await add_hook(dev, receiver.url(), name="fast")
            started = time.monotonic()
            for _ in range(20):
                await instance_down(dev)
            await receiver.wait_for(20, within=5)
            assert time.monotonic() - started < 2
            assert len(slow.requests) <= 16  # its own in-flight bound; the rest wait stored


class TestMemoryHistory:
    async def test_keeps_the_last_1000_deliveries_per_webhook(
        self, dev: RunningApp, receiver: Receiver
    ) -> None:
        # An occurrence (client.blocked), each one delivered: of a state (instance.down),
        # each newer one would supersede those still waiting.
        hook = await add_hook(dev, receiver.url(), events=["client.blocked"])
        connection = await connection_id(dev)
        for n in range(1150):
            dev.services.bus.publish(
                AclDenied(
                    connection_id=connection,
                    reason="auth",
                    username=f"#{n}",
                    client_info="addr=127.0.0.1:50000",
                    context="toplevel",
                    object="AUTH",
                    count=1,
                    timestamp_s=1_700_000_000,
                )
            )
        await receiver.wait_for(1150, within=60)

        async def trimmed() -> bool:
            page = f"/api/webhooks/{hook['id']}/deliveries?limit=1000&offset=1000"
            return not (await dev.client.get(page)).json()

        await eventually(trimmed, within=10)
        kept = (await dev.client.get(f"/api/webhooks/{hook['id']}/deliveries?limit=1000")).json()
        assert len(kept) == 1000
        newest = json.loads(kept[0]["payload"])["data"]["username"]
        oldest = json.loads(kept[-1]["payload"])["data"]["username"]
        assert (newest, oldest) == ("#1149", "#150")
