"""The composition root: `create_app(settings)` builds every service and mounts every router."""

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

from fastapi import FastAPI

from svc_monitor import __version__
from svc_monitor.audit import store as audit_store
from svc_monitor.audit.api import router as audit_router
from svc_monitor.audit.service import AuditService
from svc_monitor.audit.store import AuditStore
from svc_monitor.client_analytics import store as client_analytics_store
from svc_monitor.client_analytics.api import router as client_analytics_router
from svc_monitor.client_analytics.service import ClientAnalyticsService
from svc_monitor.client_analytics.store import ClientSnapshotStore
from svc_monitor.cluster.api import router as cluster_router
from svc_monitor.cluster.service import ClusterService
from svc_monitor.commandstats import store as commandstats_store
from svc_monitor.commandstats.api import router as commandstats_router
from svc_monitor.commandstats.service import CommandstatsService
from svc_monitor.commandstats.store import CommandstatsStore
from svc_monitor.config import Settings, StorageType
from svc_monitor.connections.api import router as connections_router
from svc_monitor.connections.live import LiveConnections
from svc_monitor.connections.secrets import SecretBox, SecretUndecryptable
from svc_monitor.connections.service import ConnectionService
from svc_monitor.connections.store import ConnectionStore
from svc_monitor.errors import install_error_handlers
from svc_monitor.events import EventBus
from svc_monitor.latency import store as latency_store
from svc_monitor.latency.api import router as latency_router
from svc_monitor.latency.service import LatencyService
from svc_monitor.latency.store import LatencyStore
from svc_monitor.live_metrics.api import router as live_metrics_router
from svc_monitor.live_metrics.service import LiveMetricsService
from svc_monitor.metrics import store as metrics_store
from svc_monitor.metrics.api import router as metrics_router
from svc_monitor.metrics.service import MetricsService
from svc_monitor.metrics.store import MetricsStore
from svc_monitor.polling.audit_poll import AuditPoller
from svc_monitor.polling.clients_poll import ClientsPoller
from svc_monitor.polling.cluster_poll import cluster_kind
from svc_monitor.polling.commandstats_poll import CommandstatsPoller
from svc_monitor.polling.health import InstanceHealth
from svc_monitor.polling.info_poll import InfoPoller
from svc_monitor.polling.latency_poll import LatencyPoller
from svc_monitor.polling.live_state import LiveState
from svc_monitor.polling.log_polls import LogPoller
from svc_monitor.polling.observe import Observer
from svc_monitor.polling.supervisor import PollSupervisor
from svc_monitor.runtime_settings.api import router as settings_router
from svc_monitor.runtime_settings.service import RuntimeSettingsService
from svc_monitor.runtime_settings.store import RuntimeSettingsStore
from svc_monitor.services import Services
from svc_monitor.slowlog import store as slowlog_store
from svc_monitor.slowlog.api import router as slowlog_router
from svc_monitor.slowlog.service import SlowlogService
from svc_monitor.slowlog.store import SlowlogStore
from svc_monitor.storage.app_meta import AppMetaStore
from svc_monitor.storage.database import Database
from svc_monitor.storage.retention import MEMORY_ROW_CAP, HistoryRetention
from svc_monitor.system.api import router as system_router
from svc_monitor.system.service import HealthService
from svc_monitor.system.version_check import VersionService
from svc_monitor.web.docs import mount_docs

logger = logging.getLogger(__name__)

OPENAPI_URL = "/api/openapi.json"
_CANARY_KEY = "encryption_canary"
_CANARY_TEXT = "svc-monitor encryption canary"


class StartupError(Exception):
    """The service cannot start; the message is one line for the operator."""


def build_services(settings: Settings) -> Services:
    db = Database.from_settings(settings)
    secrets = SecretBox(settings.ENCRYPTION_KEY, salt=settings.ENCRYPTION_KEK_SALT)
    live = LiveConnections(
        connect_timeout_s=settings.ENGINE_CONNECT_TIMEOUT_MS / 1000,
        command_timeout_s=settings.ENGINE_COMMAND_TIMEOUT_MS / 1000,
        tls_ca_file=str(settings.ENGINE_TLS_CA_FILE) if settings.ENGINE_TLS_CA_FILE else None,
    )
    meta = AppMetaStore(db)
    bus = EventBus()
    connections = ConnectionService(ConnectionStore(db, secrets), live, meta, settings, bus)
    runtime_settings = RuntimeSettingsService(RuntimeSettingsStore(db), settings, bus)
    metrics = MetricsService(MetricsStore(db), db, settings)
    live_state = LiveState()
    observer = Observer(live_state, metrics)
    instance_health = InstanceHealth(bus)
    kinds = [InfoPoller(connections, observer).kind()]
    slowlog = SlowlogService(SlowlogStore(db), connections)
    kinds += LogPoller(slowlog).kinds()
    audit = AuditService(AuditStore(db))
    client_analytics = ClientAnalyticsService(ClientSnapshotStore(db))
    kinds += [AuditPoller(audit).kind(), ClientsPoller(client_analytics, live_state).kind()]
    commandstats = CommandstatsService(CommandstatsStore(db))
    latency = LatencyService(LatencyStore(db))
    kinds += [CommandstatsPoller(commandstats).kind(), LatencyPoller(latency).kind()]
    clusters = ClusterService(connections, live_state, observer)
    kinds.append(cluster_kind(clusters))
    supervisor = PollSupervisor(
        connections=connections,
        runtime_settings=runtime_settings,
        settings=settings,
        bus=bus,
        health=instance_health,
        kinds=kinds,
    )
    return Services(
        settings=settings,
        db=db,
        secrets=secrets,
        meta=meta,
        live=live,
        bus=bus,
        connections=connections,
        runtime_settings=runtime_settings,
        health=HealthService(db, connections),
        versions=VersionService(settings),
        metrics=metrics,
        live_state=live_state,
        instance_health=instance_health,
        supervisor=supervisor,
        slowlog=slowlog,
        audit=audit,
        client_analytics=client_analytics,
        live_metrics=LiveMetricsService(connections),
        commandstats=commandstats,
        latency=latency,
        clusters=clusters,
    )


def create_app(settings: Settings, *, embedded_valkey_port: int | None = None) -> FastAPI:
    """The whole service for these settings; nothing is shared between two apps."""
    services = build_services(settings)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        try:
            await _start(services, embedded_valkey_port=embedded_valkey_port)
        except BaseException:
            await _stop(services)
            raise
        background = [
            asyncio.create_task(services.versions.run(), name="version-check"),
            asyncio.create_task(_check_connections(services), name="first-check"),
            asyncio.create_task(services.supervisor.run(), name="poll-supervisor"),
            asyncio.create_task(_retention(services).run(), name="retention"),
        ]
        try:
            yield
        finally:
            services.supervisor.request_stop()
            for task in background:
                task.cancel()
            await asyncio.gather(*background, return_exceptions=True)
            await _stop(services)

    app = FastAPI(
        title="svc-monitor",
        version=__version__,
        description="Monitoring for Valkey and Redis: connections, health, metrics and alerts.",
        openapi_url=OPENAPI_URL,
        docs_url=None,
        redoc_url=None,
        lifespan=lifespan,
    )
    app.state.services = services
    install_error_handlers(app)
    app.include_router(system_router)  # /health and /version at the root,
    app.include_router(system_router, prefix="/api")  # and under /api like everything else
    app.include_router(connections_router, prefix="/api")
    app.include_router(settings_router, prefix="/api")
    app.include_router(metrics_router, prefix="/api")
    app.include_router(slowlog_router, prefix="/api")
    app.include_router(audit_router, prefix="/api")
    app.include_router(client_analytics_router, prefix="/api")
    app.include_router(live_metrics_router, prefix="/api")
    app.include_router(commandstats_router, prefix="/api")
    app.include_router(latency_router, prefix="/api")
    app.include_router(cluster_router, prefix="/api")
    mount_docs(app, openapi_url=OPENAPI_URL)
    return app


def _retention(services: Services) -> HistoryRetention:
    """Every history table of every store; the fast-growing sample stores are also swept
    hourly. Built here because storage/ knows no domain."""
    sample_tables = (
        *metrics_store.HISTORY_TABLES,
        *commandstats_store.HISTORY_TABLES,
        *client_analytics_store.HISTORY_TABLES,
    )
    settings = services.settings
    return HistoryRetention(
        services.db,
        [
            *sample_tables,
            *slowlog_store.HISTORY_TABLES,
            *audit_store.HISTORY_TABLES,
            *latency_store.HISTORY_TABLES,
        ],
        sample_tables=sample_tables,
        retention_days=settings.LOCAL_RETENTION_DAYS,
        row_cap=MEMORY_ROW_CAP if settings.STORAGE_TYPE is StorageType.MEMORY else None,
    )


async def _stop(services: Services) -> None:
    await services.clusters.close()
    await services.live.close()
    await services.db.close()


async def _start(services: Services, *, embedded_valkey_port: int | None) -> None:
    await services.db.migrate()
    if not services.secrets.encrypting:
        logger.warning("ENCRYPTION_KEY is not set: connection passwords are stored in plain text")
    await _check_encryption_key(services)
    await services.connections.start(embedded_port=embedded_valkey_port)


async def _check_connections(services: Services) -> None:
    """Detect every engine once at startup, so the first /health and the connection list
    answer with engine facts at once; a slow or dead instance only delays its own entry."""
    connections = [c for c in await services.connections.list() if not c.secret_error]
    await asyncio.gather(
        *(services.connections.check(c) for c in connections), return_exceptions=True
    )


async def _check_encryption_key(services: Services) -> None:
    """Refuse to start with a different ENCRYPTION_KEY than the stored secrets were sealed
    with: going on would fail every connection, and re-sealing would lose them."""
    box, meta = services.secrets, services.meta
    if not box.encrypting:
        return
    stored = await meta.get(_CANARY_KEY)
    if stored is None:
        await meta.put(_CANARY_KEY, box.seal(_CANARY_TEXT, context=_CANARY_KEY))
        return
    try:
        box.open(stored, context=_CANARY_KEY)
    except SecretUndecryptable:
        raise StartupError(
            "ENCRYPTION_KEY (or ENCRYPTION_KEK_SALT) differs from the one the stored secrets "
            "were encrypted with"
        ) from None


async def preflight(settings: Settings) -> None:
    """Migrate and check the encryption key before the server starts, so a mismatch ends the
    process with one line instead of a lifespan traceback. Memory storage has nothing to check."""
    if settings.STORAGE_TYPE is StorageType.MEMORY:
        return
    services = build_services(settings)
    try:
        await services.db.migrate()
        await _check_encryption_key(services)
    finally:
        await services.db.close()
