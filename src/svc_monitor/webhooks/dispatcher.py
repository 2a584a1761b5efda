"""From bus events to deliveries: which webhooks want this event, and what each one gets.

For each event: the candidate notifications (event_types/table.py), then for
every enabled webhook whose scope covers the event's connection and which subscribes to
the type: the tier check (a licence that lapsed stops paid events, even on webhooks
saved before), for measured ones whether detection judges that they fire for this
webhook (its thresholds and hysteresis factor, detection/alerts/service.py), and one
delivery with its envelope. One
event's deliveries are stored together and attempted at once (worker.py).

A delivery of a state (instance.down ...) is stored only once the alert states changed so
far are in storage (`alerts_stored`): a replica killed as its receiver gets the POST has
left the replica taking over knowing the instance is down, so that one says when it is
up again.
"""

import json
import logging
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from svc_monitor.connections.service import ConnectionService
from svc_monitor.detection.alerts.service import AlertStates
from svc_monitor.errors import NotFound
from svc_monitor.event_types.base import Measured
from svc_monitor.event_types.readings import READINGS
from svc_monitor.event_types.table import candidates, state_of
from svc_monitor.events import ConnectionsChanged, Event, EventBus, InstanceEvent
from svc_monitor.licensing.models import WEBHOOK_EVENT_TIERS
from svc_monitor.licensing.service import LicenseService
from svc_monitor.webhooks.models import Delivery, DeliveryStatus, Webhook
from svc_monitor.webhooks.worker import DeliveryWorker, Job, now_ms

logger = logging.getLogger(__name__)

Instance = dict[str, Any]


def envelope(
    delivery_id: str, event_type: str, at_ms: int, instance: Instance, data: dict[str, Any]
) -> str:
    """The request body, `{id, event, timestamp, instance, data}`
    (docs/features/webhooks.md#delivery)."""
    body = {
        "id": delivery_id,
        "event": event_type,
        "timestamp": at_ms,
        "instance": instance,
        "data": data,
    }
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False)


class WebhookDispatcher:
    """Consumes the bus for webhooks."""

    def __init__(
        self,
        bus: EventBus,
        worker: DeliveryWorker,
        webhooks: Callable[[], Awaitable[list[Webhook]]],
        connections: ConnectionService,
        license: LicenseService,
        alerts: AlertStates,
        may_deliver: Callable[[], bool] = lambda: True,
        alerts_stored: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        # A reading (every poll of every connection publishes several) is not queued while
        # no webhook is enabled: an install without webhooks does no work for them.
        self._subscription = bus.subscribe(
            "webhooks", accepts=lambda event: not isinstance(event, READINGS) or may_deliver()
        )
        self._worker = worker
        self._webhooks = webhooks
        self._connections = connections
        self._license = license
        self.alerts = alerts
        self._alerts_stored = alerts_stored
        self._instances: dict[str, Instance] = {}
        self._handling = False

    @property
    def queued(self) -> int:
        """How many events have been queued for webhooks so far."""
        return self._subscription.offered

    @property
    def idle(self) -> bool:
        """Every event published so far has been turned into deliveries (or nothing)."""
        return not self._handling and self._subscription.backlog == 0

    async def run(self) -> None:
        async for event in self._subscription:
            self._handling = True
            try:
                await self.handle(event)
            except Exception:  # one bad event must not stop webhooks
                logger.exception("webhooks could not handle %s", type(event).__name__)
            finally:
                self._handling = False

    async def handle(self, event: Event) -> None:
        if isinstance(event, ConnectionsChanged):
            self._instances.pop(event.connection_id, None)
            return
        if not isinstance(event, InstanceEvent):
            return
        # Readings arrive with every poll of every connection: look at the (cached) webhooks
        # before building anything, so an install without webhooks does no work here.
        hooks = [w for w in await self._webhooks() if w.enabled and w.covers(event.connection_id)]
        if not hooks:
            return
        found = candidates(event)
        if not found:
            return
        tier = self._license.tier
        jobs: list[Job] = []
        instance: Instance | None = None
        for webhook in hooks:
            for candidate in found:
                kind = candidate.event_type
                if kind not in webhook.events or not tier.includes(WEBHOOK_EVENT_TIERS[kind]):
                    continue
                if isinstance(candidate, Measured):
                    key = (webhook.id, event.connection_id, kind)
                    factor = webhook.alert_config.hysteresisFactor
                    judged = self.alerts.fires(key, candidate, webhook.thresholds, factor=factor)
                    if judged is None:
                        continue
                    data = judged
                else:
                    data = candidate.data
                if instance is None:
                    instance = await self._instance(event.connection_id)
                jobs.append(_job(webhook, kind, event, instance, data))
        if self._alerts_stored is not None and any(state_of(j.delivery.event_type) for j in jobs):
            await self._alerts_stored()
        await self._worker.submit(jobs)

    async def _instance(self, connection_id: str) -> Instance:
        known = self._instances.get(connection_id)
        if known is None:
            known = self._instances[connection_id] = await instance_of(
                self._connections, connection_id
            )
        return known


async def instance_of(connections: ConnectionService, connection_id: str | None) -> Instance:
    """The envelope's `instance`: the connection's host and port (None for the default)."""
    try:
        connection = await connections.resolve(connection_id)
    except NotFound:
        return {"host": None, "port": None, "connectionId": connection_id}
    return {"host": connection.host, "port": connection.port, "connectionId": connection.id}


def _job(
    webhook: Webhook, kind: str, event: InstanceEvent, instance: Instance, data: dict[str, Any]
) -> Job:
    delivery_id = str(uuid.uuid4())
    payload = envelope(delivery_id, kind, event.at_ms, instance, data)
    delivery = Delivery(
        id=delivery_id,
        webhook_id=webhook.id,
        event_type=kind,
        payload=payload,
        status=DeliveryStatus.PENDING,
        attempts=0,
        max_attempts=1 + webhook.retry_policy.maxRetries,
        created_at=now_ms(),
        connection_id=event.connection_id,
        event_at=event.at_ms,
    )
    return Job(webhook, delivery)
