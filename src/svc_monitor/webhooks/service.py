"""Webhooks: validation, storage, the test call, delivery history and the retry queue.

The rules a saved webhook obeys:
- url: HTTPS, or HTTP only with NODE_ENV=development; no credentials in it; and, the
  SSRF rule, its host (a literal in any spelling, or every address its name resolves
  to) is not private. Outside production loopback (localhost, 127.x, ::1) is allowed.
  The same check runs again before every delivery (sender.py).
- events: known types only, and a type above the licence tier is refused with 403
  naming it (new events only when editing, so a downgraded install can still rename).
- headers: no header we set or that frames the message (headers.py); values of
  credential-like headers are masked in answers, like the secret.

Deliveries a lapsed tier no longer allows, or for a disabled webhook, are not made
(dispatcher.py); queued ones of a disabled or deleted webhook end `failed`. A manual
retry queues a dead_letter or failed delivery, always (one more attempt); one that a
newer delivery of its state has made stale then ends `superseded` when claimed, unsent
(states.py; docs/features/webhooks.md#retries-and-states).
"""

import asyncio
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

from svc_monitor.config import Settings
from svc_monitor.connections.service import ConnectionService
from svc_monitor.errors import Conflict, Forbidden, NotFound, Unprocessable
from svc_monitor.kit.records import from_attributes
from svc_monitor.licensing.models import WEBHOOK_EVENT_TIERS
from svc_monitor.licensing.service import LicenseService
from svc_monitor.webhooks import ssrf
from svc_monitor.webhooks.dispatcher import envelope, instance_of
from svc_monitor.webhooks.headers import check_custom_headers, is_sensitive_header, mask_value
from svc_monitor.webhooks.models import QUEUED, Delivery, Webhook
from svc_monitor.webhooks.schemas import (
    DeliveryRead,
    RetryQueueStats,
    TestResult,
    WebhookCreate,
    WebhookRead,
    WebhookUpdate,
)
from svc_monitor.webhooks.sender import Sender
from svc_monitor.webhooks.store import WebhookStore
from svc_monitor.webhooks.targets import parse_webhook_url

logger = logging.getLogger(__name__)

# How stale this process's copy of the webhook list may get: changes made on another
# replica reach this one's deliveries within this time.
REFRESH_MS = 5000
TEST_MESSAGE = "This is a test delivery from svc-monitor"


class WebhookNotFound(NotFound):
    pass


class DeliveryNotFound(NotFound):
    pass


class EventsLocked(Forbidden):
    pass


def _now_ms() -> int:
    return int(time.time() * 1000)


class WebhookService:
    """The webhooks API's logic, and the cached list the dispatcher reads."""

    def __init__(
        self,
        store: WebhookStore,
        sender: Sender,
        *,
        settings: Settings,
        connections: ConnectionService,
        license: LicenseService,
        clock: Callable[[], int] = _now_ms,
    ) -> None:
        self._store = store
        self._sender = sender
        self._connections = connections
        self._license = license
        self._clock = clock
        self._allow_http = settings.NODE_ENV == "development"
        self._allow_loopback = not settings.is_production
        self._cache: dict[str, Webhook] | None = None
        self._listed: set[str] = set()  # the ids of the list last read
        self._reload_asked = False  # an event went through to have the list reloaded
        self._loaded_at = 0
        self._lock = asyncio.Lock()
        self.on_requeue: Callable[[], None] | None = None  # wakes the retry queue
        # Told after each change made here: the other replicas reload their list.
        self.on_change: Callable[[], None] | None = None
        # Told of the webhooks gone from the list since it was last read (deleted here or
        # on another replica): their alert states go with them.
        self.on_gone: Callable[[set[str]], Awaitable[None]] | None = None

    # --- the cached list (dispatcher, worker) ---

    async def active(self) -> list[Webhook]:
        return list((await self._cached()).values())

    def may_deliver(self) -> bool:
        """Whether a webhook may want the readings every poll publishes: False while the
        list holds no enabled webhook, so they need not reach the dispatcher at all.

        When the list is due a reload (emptied by a change here, or older than REFRESH_MS
        for a change made by another replica), one event is let through: only the
        dispatcher reloads it, as it handles that event. Letting them all through until
        then flooded the dispatcher at 1,000 connections, which put the reload off."""
        cache = self._cache
        if cache is not None and any(w.enabled for w in cache.values()):
            return True
        if cache is not None and self._clock() - self._loaded_at < REFRESH_MS:
            return False
        if self._reload_asked:
            return False
        self._reload_asked = True
        return True

    async def lookup(self, webhook_id: str) -> Webhook | None:
        return (await self._cached()).get(webhook_id)

    async def _cached(self) -> dict[str, Webhook]:
        cache = self._cache
        if cache is not None and self._clock() - self._loaded_at < REFRESH_MS:
            return cache
        async with self._lock:
            if self._cache is None or self._clock() - self._loaded_at >= REFRESH_MS:
                return await self._load()
            return self._cache

    async def reload(self) -> None:
        """Read the list again now: a change made here or on another replica. Eager, not
        on the next event: until the dispatcher had reloaded a list emptied by a change,
        `may_deliver` let one reading through and held back the rest, so the first
        readings after a webhook was created could be judged without it."""
        async with self._lock:
            await self._load()

    async def _load(self) -> dict[str, Webhook]:
        """Read the list (under the lock), and tell of the webhooks gone since last time."""
        cache = self._cache = {w.id: w for w in await self._store.all()}
        self._loaded_at = self._clock()
        self._reload_asked = False
        gone, self._listed = self._listed - cache.keys(), set(cache)
        if gone and self.on_gone is not None:
            await self.on_gone(gone)
        return cache

    async def _changed(self) -> None:
        self._cache = None  # nothing reads a list that is about to be replaced
        self._reload_asked = False
        try:
            await self.reload()
        except Exception as exc:  # stored already: the list is read on the next event
            logger.warning("webhooks: could not reload the list after a change: %s", exc)
        if self.on_change is not None:
            self.on_change()

    # --- the API ---

    async def list_webhooks(self, connection_id: str | None) -> list[WebhookRead]:
        hooks = await self._store.all()
        if connection_id is not None:
            hooks = [w for w in hooks if w.covers(connection_id)]
        return [to_read(w) for w in hooks]

    async def get(self, webhook_id: str) -> WebhookRead:
        return to_read(await self._require(webhook_id))

    async def create(self, body: WebhookCreate, *, connection_id: str | None) -> WebhookRead:
        if connection_id is not None:
            await self._connections.resolve(connection_id)  # 404 naming the header
        events = self._check_events(body.events, already=())
        await self._check_url(body.url)
        _check_headers(body.headers)
        now = self._clock()
        webhook = Webhook(
            id=str(uuid.uuid4()),
            name=body.name,
            url=body.url,
            secret=body.secret,
            enabled=body.enabled,
            events=events,
            headers=dict(body.headers),
            retry_policy=body.retryPolicy,
            delivery_config=body.deliveryConfig,
            alert_config=body.alertConfig,
            thresholds=body.thresholds,
            connection_id=connection_id,
            created_at=now,
            updated_at=now,
        )
        await self._store.insert(webhook)
        await self._changed()
        return to_read(webhook)

    async def update(self, webhook_id: str, body: WebhookUpdate) -> WebhookRead:
        old = await self._require(webhook_id)
        given = body.model_fields_set
        changes: dict[str, Any] = {}
        if body.name is not None:
            changes["name"] = body.name
        if body.events is not None:
            changes["events"] = self._check_events(body.events, already=old.events)
        if body.url is not None and body.url != old.url:
            await self._check_url(body.url)
            changes["url"] = body.url
        if "secret" in given:
            changes["secret"] = _kept_secret(body.secret, old.secret)
        if body.headers is not None:
            headers = _kept_headers(body.headers, old.headers)
            _check_headers(headers)
            changes["headers"] = headers
        for field, attribute in _SETTINGS_FIELDS.items():
            value = getattr(body, field)
            if value is not None:
                changes[attribute] = value
        if body.enabled is not None:
            changes["enabled"] = body.enabled
        webhook = replace(old, **changes, updated_at=self._clock())
        await self._store.replace(webhook)
        await self._changed()
        return to_read(webhook)

    async def delete(self, webhook_id: str) -> None:
        if not await self._store.delete(webhook_id):
            raise WebhookNotFound(f"Webhook '{webhook_id}' not found", field="id")
        self._listed.add(webhook_id)  # gone at the next read, whether this one read it or not
        await self._changed()

    async def test(self, webhook_id: str) -> TestResult:
        """One signed POST of a test payload; not stored, not retried."""
        webhook = await self._require(webhook_id)
        event_type = webhook.events[0] if webhook.events else "instance.down"
        delivery_id = str(uuid.uuid4())
        instance = await instance_of(self._connections, webhook.connection_id)
        data = {"test": True, "message": TEST_MESSAGE}
        body = envelope(delivery_id, event_type, self._clock(), instance, data)
        result = await self._sender.post(
            webhook,
            delivery_id=delivery_id,
            event_type=event_type,
            body=body.encode(),
            extra_headers={"X-Webhook-Test": "true"},
        )
        return TestResult(
            success=result.succeeded,
            statusCode=result.status_code,
            responseBody=result.response_body,
            durationMs=result.duration_ms,
            error=result.error,
        )

    async def deliveries(self, webhook_id: str, *, limit: int, offset: int) -> list[DeliveryRead]:
        await self._require(webhook_id)
        rows = await self._store.deliveries(webhook_id, limit=limit, offset=offset)
        return [delivery_read(d) for d in rows]

    async def retry(self, delivery_id: str) -> None:
        delivery = await self._store.get_delivery(delivery_id)
        if delivery is None:
            raise DeliveryNotFound(f"Delivery '{delivery_id}' not found", field="deliveryId")
        queued = await self._store.requeue(
            delivery_id, now_ms=self._clock(), max_attempts=delivery.attempts + 1
        )
        if not queued:
            raise Conflict(
                f"Delivery '{delivery_id}' is {delivery.status.value}; only dead_letter or "
                "failed deliveries can be retried",
                field="deliveryId",
            )
        if self.on_requeue is not None:
            self.on_requeue()

    async def retry_queue(self) -> RetryQueueStats:
        stats = await self._store.queue_stats()
        return RetryQueueStats(pendingRetries=stats.pending, nextRetryTime=stats.next_due_at)

    # --- rules ---

    async def _require(self, webhook_id: str) -> Webhook:
        webhook = await self._store.get(webhook_id)
        if webhook is None:
            raise WebhookNotFound(f"Webhook '{webhook_id}' not found", field="id")
        return webhook

    def _check_events(self, events: list[str], *, already: tuple[str, ...]) -> tuple[str, ...]:
        unknown = [e for e in events if e not in WEBHOOK_EVENT_TIERS]
        if unknown:
            known = ", ".join(WEBHOOK_EVENT_TIERS)
            raise Unprocessable(
                f"events: unknown event type(s) {', '.join(unknown)}; known types: {known}",
                field="events",
            )
        tier = self._license.tier
        locked = [
            e for e in events if e not in already and not tier.includes(WEBHOOK_EVENT_TIERS[e])
        ]
        if locked:
            needs = ", ".join(f"{e} (requires {WEBHOOK_EVENT_TIERS[e].value})" for e in locked)
            error = EventsLocked(
                f"events: the {tier.value} tier does not include {needs}", field="events"
            )
            error.extra = {"lockedEvents": locked, "currentTier": tier.value}
            raise error
        return tuple(dict.fromkeys(events))  # duplicates once, order kept

    async def _check_url(self, url: str) -> None:
        try:
            target = parse_webhook_url(url, allow_http=self._allow_http)
        except ValueError as exc:
            raise Unprocessable(f"url: {exc}", field="url") from None
        try:
            await ssrf.resolve_target(target.host, target.port, allow_loopback=self._allow_loopback)
        except ssrf.UnsafeTarget as exc:
            raise Unprocessable(exc.message, field="url") from None


_SETTINGS_FIELDS = {
    "retryPolicy": "retry_policy",
    "deliveryConfig": "delivery_config",
    "alertConfig": "alert_config",
    "thresholds": "thresholds",
}


def _check_headers(headers: dict[str, str]) -> None:
    try:
        check_custom_headers(headers)
    except ValueError as exc:
        raise Unprocessable(f"headers: {exc}", field="headers") from None


def _kept_secret(given: str | None, current: str | None) -> str | None:
    """The secret after an update: the masked form a GET showed means "keep it"."""
    if given is not None and current is not None and given == mask_value(current):
        return current
    return given


def _kept_headers(given: dict[str, str], current: dict[str, str]) -> dict[str, str]:
    kept = dict(given)
    for name, value in given.items():
        old = current.get(name)
        if old is not None and is_sensitive_header(name) and value == mask_value(old):
            kept[name] = old
    return kept


def to_read(webhook: Webhook) -> WebhookRead:
    headers = {
        name: mask_value(value) if is_sensitive_header(name) else value
        for name, value in webhook.headers.items()
    }
    return from_attributes(
        WebhookRead,
        webhook,
        secret=mask_value(webhook.secret) if webhook.secret is not None else None,
        events=list(webhook.events),
        headers=headers,
    )


def delivery_read(d: Delivery) -> DeliveryRead:
    return from_attributes(
        DeliveryRead,
        d,
        status=d.status.value,
        nextRetryAt=d.next_retry_at if d.status in QUEUED else None,
    )
