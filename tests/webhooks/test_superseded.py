"""Deliveries of a state (webhooks/states.py): a newer one supersedes an older one not yet
delivered, which is then never sent and shows `superseded` in the history; an older
state is never sent after a newer one; occurrences are left alone."""

import asyncio
import time
import uuid
from typing import Any

import pytest

from svc_monitor.event_types.instance import InstanceDown, InstanceUp
from svc_monitor.webhooks.models import AttemptResult, Delivery, DeliveryStatus, Outcome
from svc_monitor.webhooks.schemas import DeliveryConfig
from svc_monitor.webhooks.store import WebhookStore
from tests.fixtures.app import AppFactory, RunningApp
from tests.fixtures.receiver import Answer, Receiver
from tests.fixtures.waiting import eventually
from tests.fixtures.webhook_store import stored_webhook

NOW = int(time.time() * 1000)
LEASE_MS = DeliveryConfig().lease_ms


# --- storage: the rule on every backend ---


@pytest.fixture
def store(webhook_store: WebhookStore) -> WebhookStore:
    return webhook_store


async def webhook(store: WebhookStore) -> str:
    return (await stored_webhook(store, events=("instance.down", "instance.up"))).id


def delivery(
    webhook_id: str, event_type: str, *, at: int, connection_id: str = "c1", due: int = NOW
) -> Delivery:
    return Delivery(
        id=str(uuid.uuid4()),
        webhook_id=webhook_id,
        event_type=event_type,
        payload="{}",
        status=DeliveryStatus.PENDING,
        attempts=0,
        max_attempts=4,
        created_at=at,
        connection_id=connection_id,
        event_at=at,
        next_retry_at=due,
    )


async def status_of(store: WebhookStore, delivery_id: str) -> Delivery:
    found = await store.get_delivery(delivery_id)
    assert found is not None
    return found


class TestStoredOrder:
    async def test_a_newer_state_supersedes_the_queued_older_one(self, store: WebhookStore) -> None:
        hook = await webhook(store)
        down = delivery(hook, "instance.down", at=NOW)
        up = delivery(hook, "instance.up", at=NOW + 1000)
        assert await store.add_deliveries([down], now_ms=NOW) == set()
        assert await store.add_deliveries([up], now_ms=NOW + 1000) == set()
        stale = await status_of(store, down.id)
        assert (stale.status, stale.superseded_by) == (DeliveryStatus.SUPERSEDED, up.id)
        assert stale.next_retry_at is None
        assert stale.completed_at == NOW + 1000
        claimed = await store.claim_due(now_ms=NOW + 2000, limit=10)
        assert [d.id for d in claimed] == [up.id]

    async def test_a_state_handled_late_is_stored_superseded(self, store: WebhookStore) -> None:
        # The replica taking over stored instance.up; a paused one then queues the
        # instance.down it saw before: it happened first, so it is never sent.
        hook = await webhook(store)
        up = delivery(hook, "instance.up", at=NOW + 1000)
        down = delivery(hook, "instance.down", at=NOW)
        await store.add_deliveries([up], now_ms=NOW + 1000)
        assert await store.add_deliveries([down], now_ms=NOW + 2000) == {down.id}
        stale = await status_of(store, down.id)
        assert (stale.status, stale.superseded_by) == (DeliveryStatus.SUPERSEDED, up.id)
        assert (await status_of(store, up.id)).status is DeliveryStatus.PENDING

    async def test_a_cut_off_attempt_is_not_sent_again_once_a_newer_state_is_stored(
        self, store: WebhookStore
    ) -> None:
        hook = await webhook(store)
        down = delivery(hook, "instance.down", at=NOW)
        await store.add_deliveries([down], now_ms=NOW)
        await store.claim_due(now_ms=NOW, limit=10)  # attempted; the process then dies
        up = delivery(hook, "instance.up", at=NOW + 1000, due=NOW + 1000 + LEASE_MS)
        await store.add_deliveries([up], now_ms=NOW + 1000)
        assert await store.claim_due(now_ms=NOW + LEASE_MS, limit=10) == []
        stale = await status_of(store, down.id)
        assert (stale.status, stale.superseded_by) == (DeliveryStatus.SUPERSEDED, up.id)
        assert stale.attempts == 1  # the cut-off attempt, once

    async def test_a_row_queued_again_after_a_newer_state_is_superseded_when_claimed(
        self, store: WebhookStore
    ) -> None:
        hook = await webhook(store)
        down = delivery(hook, "instance.down", at=NOW)
        await store.add_deliveries([down], now_ms=NOW)
        await store.claim_due(now_ms=NOW, limit=10)
        dead = Outcome(down.id, DeliveryStatus.DEAD_LETTER, 1, AttemptResult(500), NOW + 10)
        await store.record([dead])
        up = delivery(hook, "instance.up", at=NOW + 1000, due=NOW + 1000 + LEASE_MS)
        await store.add_deliveries([up], now_ms=NOW + 1000)
        # A finished delivery keeps what became of it ...
        assert (await status_of(store, down.id)).status is DeliveryStatus.DEAD_LETTER
        # ... and retried by hand (queued, always: docs/features/webhooks.md#retries-and-states)
        # it is judged when claimed.
        assert await store.requeue(down.id, now_ms=NOW + 2000, max_attempts=2)
        assert await store.claim_due(now_ms=NOW + 2000, limit=10) == []
        stale = await status_of(store, down.id)
        assert (stale.status, stale.superseded_by, stale.attempts) == (
            DeliveryStatus.SUPERSEDED,
            up.id,
            1,
        )

    async def test_other_webhooks_connections_and_occurrences_are_left_alone(
        self, store: WebhookStore
    ) -> None:
        hook, other_hook = await webhook(store), await webhook(store)
        kept = [
            delivery(other_hook, "instance.down", at=NOW),
            delivery(hook, "instance.down", at=NOW, connection_id="c2"),
            delivery(hook, "cve.detected", at=NOW),
            delivery(hook, "memory.critical", at=NOW),
        ]
        await store.add_deliveries(kept, now_ms=NOW)
        await store.add_deliveries([delivery(hook, "cve.detected", at=NOW + 1)], now_ms=NOW + 1)
        await store.add_deliveries([delivery(hook, "instance.up", at=NOW + 1)], now_ms=NOW + 1)
        for row in kept:
            assert (await status_of(store, row.id)).status is DeliveryStatus.PENDING, row

    @pytest.mark.parametrize(
        ("older", "newer"),
        [
            ("failover.started", "failover.completed"),
            ("failover.completed", "failover.started"),
            ("cluster.failover", "cluster.failover"),
            ("instance.up", "instance.down"),
            ("instance.down", "instance.down"),
        ],
    )
    async def test_each_state_pairs_its_types(
        self, store: WebhookStore, older: str, newer: str
    ) -> None:
        hook = await webhook(store)
        first = delivery(hook, older, at=NOW)
        await store.add_deliveries([first], now_ms=NOW)
        await store.add_deliveries([delivery(hook, newer, at=NOW + 1)], now_ms=NOW + 1)
        assert (await status_of(store, first.id)).status is DeliveryStatus.SUPERSEDED

    async def test_a_failed_attempt_does_not_revive_a_superseded_delivery(
        self, store: WebhookStore
    ) -> None:
        hook = await webhook(store)
        down = delivery(hook, "instance.down", at=NOW)
        await store.add_deliveries([down], now_ms=NOW)
        await store.claim_due(now_ms=NOW, limit=10)  # on the wire ...
        up = delivery(hook, "instance.up", at=NOW + 1000, due=NOW + 1000 + LEASE_MS)
        await store.add_deliveries([up], now_ms=NOW + 1000)  # ... when the up is queued
        failed = AttemptResult(status_code=503, response_body="busy", duration_ms=40)
        retry = Outcome(down.id, DeliveryStatus.RETRYING, 1, failed, NOW + 1100, NOW + 2100)
        await store.record([retry])
        stale = await status_of(store, down.id)
        assert (stale.status, stale.superseded_by) == (DeliveryStatus.SUPERSEDED, up.id)
        assert (stale.attempts, stale.status_code, stale.next_retry_at) == (1, 503, None)
        # One that got through is a success: the receiver has it.
        ok = Outcome(down.id, DeliveryStatus.SUCCESS, 1, AttemptResult(200, "ok", 5), NOW + 1200)
        await store.record([ok])
        delivered = await status_of(store, down.id)
        assert (delivered.status, delivered.superseded_by) == (DeliveryStatus.SUCCESS, None)


# --- what a receiver and an operator see ---


async def hook_for(app: RunningApp, receiver: Receiver, **settings: Any) -> dict[str, Any]:
    body = {
        "name": "ops",
        "url": receiver.url(),
        "events": ["instance.down", "instance.up"],
        **settings,
    }
    answer = await app.client.post("/api/webhooks", json=body)
    assert answer.status_code == 201, answer.text
    hook: dict[str, Any] = answer.json()
    return hook


async def default_connection(app: RunningApp) -> str:
    return str((await app.client.get("/api/connections")).json()[0]["id"])


async def history(app: RunningApp, hook: dict[str, Any]) -> dict[str, dict[str, Any]]:
    answer = await app.client.get(f"/api/webhooks/{hook['id']}/deliveries")
    assert answer.status_code == 200, answer.text
    return {d["eventType"]: d for d in answer.json()}


def went_down(app: RunningApp, connection_id: str) -> None:
    app.services.bus.publish(
        InstanceDown(connection_id=connection_id, reason="unreachable", message="refused")
    )


def came_back(app: RunningApp, connection_id: str) -> None:
    app.services.bus.publish(
        InstanceUp(connection_id=connection_id, down_since_ms=int(time.time() * 1000) - 5000)
    )


class TestReceiverAndHistory:
    async def test_a_retrying_down_is_superseded_by_the_up_and_never_sent_again(
        self, app_factory: AppFactory, receiver: Receiver
    ) -> None:
        async with app_factory(NODE_ENV="development") as app:
            retries = {"initialDelayMs": 1000, "maxDelayMs": 1000}
            hook = await hook_for(app, receiver, retryPolicy=retries)
            connection = await default_connection(app)
            receiver.script.append(Answer(status=503))
            went_down(app, connection)
            await receiver.wait_for(1)

            async def retrying() -> bool:
                return (await history(app, hook)).get("instance.down", {}).get(
                    "status"
                ) == "retrying"

            await eventually(retrying)
            came_back(app, connection)
            await receiver.wait_for(2)
            await asyncio.sleep(2.5)  # past the down's retry time, and a look at the queue
            assert [r.json["event"] for r in receiver.requests] == ["instance.down", "instance.up"]
            rows = await history(app, hook)
            down, up = rows["instance.down"], rows["instance.up"]
            assert (down["status"], down["supersededBy"]) == ("superseded", up["id"])
            assert (down["attempts"], down["statusCode"], down["nextRetryAt"]) == (1, 503, None)
            assert (up["status"], up["attempts"], up["supersededBy"]) == ("success", 1, None)
            stats = (await app.client.get("/api/webhooks/stats/retry-queue")).json()
            assert stats["pendingRetries"] == 0
            # Not waiting to be sent any more, so not to be retried by hand either.
            again = await app.client.post(f"/api/webhooks/deliveries/{down['id']}/retry")
            assert again.status_code == 409, again.text
            assert "is superseded" in again.json()["message"]

    async def test_the_up_waits_for_the_down_on_the_wire(
        self, memory_app_factory: AppFactory, receiver: Receiver
    ) -> None:
        async with memory_app_factory(NODE_ENV="development") as app:
            hook = await hook_for(app, receiver)
            connection = await default_connection(app)
            receiver.script.append(Answer(delay_s=1.5))  # a slow answer to the down
            went_down(app, connection)
            await receiver.wait_for(1)
            # Counted as it began, while the receiver has not answered yet.
            assert (await history(app, hook))["instance.down"]["attempts"] == 1
            came_back(app, connection)
            await receiver.wait_for(2, within=10)
            down, up = receiver.requests
            assert (down.json["event"], up.json["event"]) == ("instance.down", "instance.up")
            assert up.at - down.at >= 1.4  # sent once the down was answered, never beside it
            await app.services.webhook_worker.settle()
            rows = await history(app, hook)
            assert rows["instance.down"]["status"] == rows["instance.up"]["status"] == "success"
            assert rows["instance.down"]["attempts"] == rows["instance.up"]["attempts"] == 1

    async def test_a_dead_letter_retried_by_hand_after_a_newer_state_is_not_sent(
        self, memory_app_factory: AppFactory, receiver: Receiver
    ) -> None:
        async with memory_app_factory(NODE_ENV="development") as app:
            hook = await hook_for(app, receiver, retryPolicy={"maxRetries": 0})
            connection = await default_connection(app)
            receiver.script.append(Answer(status=503))
            went_down(app, connection)
            await receiver.wait_for(1)
            await app.services.webhook_worker.settle()
            down = (await history(app, hook))["instance.down"]
            assert down["status"] == "dead_letter"
            came_back(app, connection)
            await receiver.wait_for(2)
            up = (await history(app, hook))["instance.up"]
            again = await app.client.post(f"/api/webhooks/deliveries/{down['id']}/retry")
            assert again.status_code == 202, again.text  # queued, as always

            async def judged() -> bool:
                status = (await history(app, hook))["instance.down"]["status"]
                return bool(status == "superseded")

            await eventually(judged)
            row = (await history(app, hook))["instance.down"]
            assert (row["supersededBy"], row["attempts"]) == (up["id"], 1)
            assert [r.json["event"] for r in receiver.requests] == ["instance.down", "instance.up"]
