"""Threshold events delivered: each fires once per crossing and re-arms below threshold x
hysteresisFactor, each webhook with its own thresholds and state (the alert states
themselves: tests/detection/alerts/test_alert_states.py)."""

from collections.abc import AsyncIterator
from typing import Any

import pytest

from svc_monitor.event_types.readings import MemoryReading
from tests.fixtures.app import AppFactory, RunningApp
from tests.fixtures.receiver import Receiver
from tests.fixtures.waiting import eventually

MAXMEMORY = 1_000_000


@pytest.fixture
async def dev(memory_app_factory: AppFactory) -> AsyncIterator[RunningApp]:
    async with memory_app_factory(NODE_ENV="development") as running:
        yield running


async def readings(app: RunningApp, percents: list[float]) -> None:
    connection = (await app.client.get("/api/connections")).json()[0]["id"]
    for percent in percents:
        used = int(MAXMEMORY * percent / 100)
        app.services.bus.publish(
            MemoryReading(
                connection_id=connection,
                used_memory=used,
                maxmemory=MAXMEMORY,
                maxmemory_policy="allkeys-lru",
            )
        )


async def all_handled(app: RunningApp) -> None:
    """Every reading published so far has been judged and its deliveries made."""

    async def idle() -> bool:
        return app.services.webhook_dispatcher.idle

    await eventually(idle)
    await app.services.webhook_worker.settle()


async def hook(app: RunningApp, target: str, **overrides: Any) -> dict[str, Any]:
    body = {"name": "mem", "url": target, "events": ["memory.critical"], **overrides}
    answer = await app.client.post("/api/webhooks", json=body)
    assert answer.status_code == 201, answer.text
    created: dict[str, Any] = answer.json()
    return created


class TestThroughTheBus:
    async def test_memory_between_91_and_85_fires_once_and_81_rearms(
        self, dev: RunningApp, receiver: Receiver
    ) -> None:
        await hook(dev, receiver.url())
        await readings(dev, [91, 85, 91, 85, 91])
        await all_handled(dev)
        assert len(receiver.requests) == 1
        data = receiver.requests[0].json["data"]
        assert data["value"] == 91.0
        assert data["threshold"] == 90
        assert data["maxmemory"] == MAXMEMORY
        assert data["usedMemory"] == 910_000
        await readings(dev, [80.9, 91])
        await receiver.wait_for(2)

    async def test_each_webhook_judges_with_its_own_threshold(
        self, dev: RunningApp, receiver: Receiver
    ) -> None:
        await hook(dev, receiver.url("/at-90"))
        await hook(dev, receiver.url("/at-70"), thresholds={"memoryCriticalPercent": 70})
        await readings(dev, [75])
        await all_handled(dev)
        assert len(receiver.on("/at-70")) == 1
        assert receiver.on("/at-90") == []

    async def test_no_limit_no_alert(self, dev: RunningApp, receiver: Receiver) -> None:
        await hook(dev, receiver.url())
        connection = (await dev.client.get("/api/connections")).json()[0]["id"]
        dev.services.bus.publish(
            MemoryReading(
                connection_id=connection, used_memory=10**9, maxmemory=0, maxmemory_policy=None
            )
        )
        await readings(dev, [95])  # a later reading with a limit still fires
        await receiver.wait_for(1)
        assert receiver.requests[0].json["data"]["value"] == 95.0
