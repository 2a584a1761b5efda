"""`create_entitlement_app(settings)`: the entitlement server as an ASGI app."""

import contextlib
import time
from collections.abc import AsyncIterator, Callable

from fastapi import FastAPI

from svc_monitor import __version__
from svc_monitor.api.error_responses import install_error_handlers
from svc_monitor.licensing.entitlement.api import router
from svc_monitor.licensing.entitlement.config import EntitlementSettings
from svc_monitor.licensing.entitlement.service import EntitlementService
from svc_monitor.licensing.entitlement.store import EntitlementStore
from svc_monitor.storage.database import Database


def create_entitlement_app(
    settings: EntitlementSettings, *, clock: Callable[[], float] = time.time
) -> FastAPI:
    url = settings.ENTITLEMENT_STORAGE_URL
    db = Database.open(
        settings.ENTITLEMENT_STORAGE_TYPE,
        sqlite_path=settings.ENTITLEMENT_SQLITE_FILEPATH,
        url=url.get_secret_value() if url else None,
    )
    store = EntitlementStore(db)

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        await store.create_tables()
        try:
            yield
        finally:
            await db.close()

    app = FastAPI(
        title="svc-monitor entitlement server",
        version=__version__,
        description="Licence keys, online and offline licence tokens for svc-monitor.",
        lifespan=lifespan,
    )
    app.state.settings = settings
    app.state.entitlements = EntitlementService(settings, store, clock=clock)
    install_error_handlers(app)
    app.include_router(router)
    return app
