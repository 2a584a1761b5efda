"""Threshold events fire once per crossing and re-arm below threshold x hysteresisFactor,
each webhook with its own thresholds and state."""

from collections.abc import AsyncIterator
from typing import Any

import pytest

from svc_monitor.event_types.readings import MemoryReading
from svc_monitor.notifications.service import AlertStates
from tests.fixtures.app import AppFactory, RunningApp
from tests.fixtures.receiver import Receiver
from tests.fixtures.waiting import eventually

MAXMEMORY = 1_000_000


class Clock:
    def __init__(self) -> None:
        self.ms = 0

    def __call__(self) -> int:
        return self.ms


class TestAlertStates:
    def test_oscillating_above_recovery_fires_once_and_rearms_below_it(self) -> None:
        states = AlertStates()
        key = ("hook", "conn", "memory.critical")
        fired = [
            states.crossed(key, value, threshold=90, factor=0.9)
            for value in [50, 91, 85, 91, 85, 91, 80.9, 85, 91]
        ]
        assert fired == [False, True, False, False, False, False, False, False, True]

    def test_each_webhook_has_its_own_state(self) -> None:
        states = AlertStates()
        assert states.crossed(("a", "c", "e"), 95, threshold=90, factor=0.9)
        assert states.crossed(("b", "c", "e"), 95, threshold=90, factor=0.9)
        assert not states.crossed(("a", "c", "e"), 95, threshold=90, factor=0.9)

    def test_oldest_alert_is_evicted_past_capacity(self) -> None:
        states = AlertStates(capacity=3)
        for name in "abcd":
            states.crossed((name, "c", "e"), 95, threshold=90, factor=0.9)
        assert len(states) == 3
        assert not states.is_active(("a", "c", "e"))
        assert states.crossed(("a", "c", "e"), 95, threshold=90, factor=0.9)  # fires again

    def test_alert_expires_after_its_ttl(self) -> None:
        clock = Clock()
        states = AlertStates(ttl_ms=1000, clock=clock)
        key = ("a", "c", "e")
        assert states.crossed(key, 95, threshold=90, factor=0.9)
        clock.ms = 999
        assert not states.crossed(key, 95, threshold=90, factor=0.9)
        clock.ms = 1000
        assert states.crossed(key, 95, threshold=90, factor=0.9)

    def test_each_start_and_stop_is_told_and_a_restored_alert_stays_quiet(self) -> None:
        clock = Clock()
        told: list[tuple[tuple[str, str, str], int | None]] = []
        states = AlertStates(clock=clock, on_change=lambda key, at: told.append((key, at)))
        key = ("a", "c", "e")
        clock.ms = 5
        assert states.crossed(key, 95, threshold=90, factor=0.9)
        assert not states.crossed(key, 80, threshold=90, factor=0.9)  # recovered
        assert told == [(key, 5), (key, None)]
        # Another replica's alert, still firing when this one takes the connection over.
        taken_over = AlertStates(clock=clock)
        taken_over.restore(key, 5)
        assert not taken_over.crossed(key, 95, threshold=90, factor=0.9)
        assert taken_over.crossed(key, 80, threshold=90, factor=0.9) is False
        assert taken_over.crossed(key, 95, threshold=90, factor=0.9)  # re-armed, fires
        # One past its TTL is not restored: it fires as the daily reminder would.
        expired = AlertStates(clock=clock, ttl_ms=10)
        clock.ms = 100
        expired.restore(key, 5)
        assert expired.crossed(key, 95, threshold=90, factor=0.9)


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
