"""The composition root: `create_app(settings)` builds every service and mounts every router."""

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

from fastapi import FastAPI

from svc_monitor import __version__
from svc_monitor.config import Settings, StorageType
from svc_monitor.connections.api import router as connections_router
from svc_monitor.connections.live import LiveConnections
from svc_monitor.connections.secrets import SecretBox, SecretUndecryptable
from svc_monitor.connections.service import ConnectionService
from svc_monitor.connections.store import ConnectionStore
from svc_monitor.errors import install_error_handlers
from svc_monitor.events import EventBus
from svc_monitor.metrics.api import router as metrics_router
from svc_monitor.metrics.service import MetricsService
from svc_monitor.metrics.store import MetricsStore
from svc_monitor.polling.health import InstanceHealth
from svc_monitor.polling.info_poll import InfoPoller
from svc_monitor.polling.live_state import LiveState
from svc_monitor.polling.observe import Observer
from svc_monitor.polling.supervisor import PollSupervisor
from svc_monitor.runtime_settings.api import router as settings_router
from svc_monitor.runtime_settings.service import RuntimeSettingsService
from svc_monitor.runtime_settings.store import RuntimeSettingsStore
from svc_monitor.services import Services
from svc_monitor.storage.app_meta import AppMetaStore
from svc_monitor.storage.database import Database
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
    # [slice: slowlog] poll kinds
    # [slice: audit] poll kinds
    # [slice: live-metrics] poll kinds
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
        # [slice: slowlog] services
        # [slice: audit] services
        # [slice: live-metrics] services
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
    # [slice: slowlog] routers
    # [slice: audit] routers
    # [slice: live-metrics] routers
    mount_docs(app, openapi_url=OPENAPI_URL)
    return app


async def _stop(services: Services) -> None:
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
