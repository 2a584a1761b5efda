"""The webhooks' parts: the webhooks, their deliveries and routes (core); and, with the
features, the delivery history's retention."""

import functools

from svc_monitor.config import StorageType
from svc_monitor.connections.service import ConnectionService
from svc_monitor.detection.alerts.service import AlertStates, SharedAlerts
from svc_monitor.licensing.service import LicenseService
from svc_monitor.parts import Core, Part, Registry, Task
from svc_monitor.replicas.change_feed import ChangeFeed
from svc_monitor.webhooks.api import router
from svc_monitor.webhooks.dispatcher import WebhookDispatcher
from svc_monitor.webhooks.sender import Sender
from svc_monitor.webhooks.service import WebhookService
from svc_monitor.webhooks.store import HISTORY_TABLES, WebhookStore
from svc_monitor.webhooks.worker import DeliveryWorker


def part(registry: Registry) -> Part:
    core = registry.get(Core)
    settings = core.settings

    @functools.cache
    def build() -> tuple[WebhookService, DeliveryWorker, WebhookDispatcher]:
        connections, license = registry.get(ConnectionService), registry.get(LicenseService)
        shared = registry.get(SharedAlerts)
        sender = Sender(
            allow_loopback=not settings.is_production,
            allow_http=settings.NODE_ENV == "development",
        )
        store = WebhookStore(core.db, core.secrets)
        webhooks = WebhookService(
            store, sender, settings=settings, connections=connections, license=license
        )
        worker = DeliveryWorker(
            store,
            sender,
            webhooks.lookup,
            cap_history=settings.STORAGE_TYPE is StorageType.MEMORY,
        )
        webhooks.on_requeue = worker.wake
        alerts = AlertStates(on_change=shared.threshold_changed)
        # A webhook deleted, here or (on its next reload) on another replica: its alerts go.
        webhooks.on_gone = lambda ids: shared.forget_webhooks(ids, alerts)
        changes = registry.get(ChangeFeed)
        webhooks.on_change = lambda: changes.announce("webhooks")
        changes.on("webhooks", webhooks.reload)
        dispatcher = WebhookDispatcher(
            core.bus,
            worker,
            webhooks.active,
            connections,
            license,
            alerts,
            may_deliver=webhooks.may_deliver,
            alerts_stored=shared.flush,
        )
        return webhooks, worker, dispatcher

    registry.provide(WebhookService, lambda: build()[0])
    registry.provide(DeliveryWorker, lambda: build()[1])
    registry.provide(WebhookDispatcher, lambda: build()[2])
    return Part(
        name="webhooks",
        routers=(router,),
        tasks=(
            Task("webhook-deliveries", lambda: build()[1].run()),
            Task("webhook-dispatch", lambda: build()[2].run()),
        ),
    )


def feature(registry: Registry) -> Part:
    return Part(name="webhook history", history_tables=HISTORY_TABLES)
