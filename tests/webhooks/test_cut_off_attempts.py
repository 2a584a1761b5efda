"""An attempt cut off by a crash (claimed, never recorded) counts: when its lease runs out
the delivery is sent again under the same id, as attempt 2, and a delivery handed back
unattempted (its webhook busy) does not count."""

import time
import uuid

import pytest

from svc_monitor.webhooks.models import Delivery, DeliveryStatus
from svc_monitor.webhooks.schemas import DeliveryConfig
from svc_monitor.webhooks.store import WebhookStore
from tests.fixtures.webhook_store import stored_webhook

NOW = int(time.time() * 1000)
LEASE_MS = DeliveryConfig().lease_ms  # the webhook's timeout, and room to record


@pytest.fixture
def store(webhook_store: WebhookStore) -> WebhookStore:
    return webhook_store


async def queued(store: WebhookStore) -> str:
    webhook = await stored_webhook(store, events=("instance.down",))
    delivery = Delivery(
        id=str(uuid.uuid4()),
        webhook_id=webhook.id,
        event_type="instance.down",
        payload="{}",
        status=DeliveryStatus.PENDING,
        attempts=0,
        max_attempts=3,
        created_at=NOW,
        next_retry_at=NOW,
    )
    await store.add_deliveries([delivery], now_ms=NOW)
    return delivery.id


async def test_an_attempt_a_crash_cut_off_is_counted(store: WebhookStore) -> None:
    delivery_id = await queued(store)
    (first,) = await store.claim_due(now_ms=NOW, limit=10)
    assert first.id == delivery_id
    assert first.attempts == 0  # none before this one
    # The process dies mid-attempt: nothing is recorded. Within the lease nobody takes it.
    assert await store.claim_due(now_ms=NOW + LEASE_MS - 1, limit=10) == []
    (again,) = await store.claim_due(now_ms=NOW + LEASE_MS, limit=10)
    assert again.id == delivery_id  # the same delivery id, sent again
    assert again.attempts == 1  # the lost attempt counted
    stored = await store.get_delivery(delivery_id)
    assert stored is not None
    assert stored.attempts == 2  # two begun


async def test_a_delivery_handed_back_unattempted_is_not_counted(store: WebhookStore) -> None:
    delivery_id = await queued(store)
    await store.claim_due(now_ms=NOW, limit=10)
    await store.release([delivery_id], due_at=NOW + 100)
    (claimed,) = await store.claim_due(now_ms=NOW + 100, limit=10)
    assert claimed.attempts == 0
