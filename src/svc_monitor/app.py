"""The composition root: `create_app(settings)` builds the services and mounts the routers.

The core (compose.py: storage, connections, settings, users, the licence, webhooks, INFO
history and live state) is built before the server listens, with the core routes (health,
connections, settings, INFO history, docs, the OTLP receivers). What watches the
instances (watching.py: the pipe, its consumers, the polls and the push receiver) and the
feature domains are composed in features.py and installed by the lifespan:
before the first request by default, or, for the command line, right after the server
starts listening, imported on a thread so the loop keeps answering meanwhile. Until
then a feature route answers 503 with Retry-After (see `_starting`).
"""

import asyncio
import contextlib
import gc
import importlib
import logging
import time
from collections.abc import AsyncIterator, Callable, Sequence
from types import ModuleType

from fastapi import Depends, FastAPI, Request
from fastapi.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from svc_monitor import __version__
from svc_monitor.api.error_responses import error_body, install_error_handlers
from svc_monitor.auth.dependencies.access import PageRefused, authorize, install_access
from svc_monitor.compose import build_services, stop_order
from svc_monitor.config import Settings, StorageType
from svc_monitor.event_types.docs import event_table, payload_notes
from svc_monitor.kit.heap_freeze import HeapFreezer
from svc_monitor.kit.secret_box import SecretUndecryptable
from svc_monitor.mcp.http import MCP_PATH, McpEndpoint
from svc_monitor.parts import Part
from svc_monitor.services import Services
from svc_monitor.storage.sqlite_lock import SqliteFileInUse
from svc_monitor.web.assets import mount_static, plain_page, refused_page
from svc_monitor.web.docs import mount_docs
from svc_monitor.web.openapi import install_openapi, openapi_tags, operation_id

logger = logging.getLogger(__name__)

OPENAPI_URL = "/api/openapi.json"
API_CATCH_ALL = "/api/{path:path}"
UI_CATCH_ALL = "/{path:path}"
UI_PREFIX = "/ui/"  # the UI's htmx requests and form posts; its pages are at the root
_CANARY_KEY = "encryption_canary"
WEBHOOKS_TAG = f"""Signed POSTs to your URLs when monitoring events happen.

Every delivery carries `X-Webhook-Signature`: the hex HMAC-SHA256, keyed with the
webhook's secret, of `<X-Webhook-Timestamp>.<raw body>`; verify it in constant time and
reject timestamps older than 5 minutes. Only a 2xx is a success; redirects are not
followed. Attempt 1 is immediate, then retries after `initialDelayMs x
backoffMultiplier^(n-1)` (at most `maxDelayMs`) until `maxRetries`, then `dead_letter`;
`failed` means the target is refused at send time (SSRF rules) or the webhook was
disabled or deleted; `superseded` means a newer delivery of the same state (instance.down
and instance.up, failover.started and failover.completed, cluster.failover; per webhook
and connection) replaced it before it got through, so it is never sent after the newer
one (`supersededBy` names it). URLs must be `https://` (`http://` only with NODE_ENV=development)
and public (loopback allowed outside production). Threshold events fire once above the
level and re-arm below `level x hysteresisFactor`.

Every event type: the tier is the lowest one that may subscribe, the severity that of its
OTLP log record.

{event_table()}

Payloads of the spike events and of the event types svc-monitor adds (with the tier each
needs); the fields of the others are listed on the documentation's webhooks page:

{payload_notes()}"""
_CANARY_TEXT = "svc-monitor encryption canary"


class StartupError(Exception):
    """The service cannot start; the message is one line for the operator."""


def create_app(
    settings: Settings,
    *,
    embedded_valkey_port: int | None = None,
    features_in_background: bool = False,
    ui_on_demand: bool = False,
    freeze_heap: bool = False,
    clock: Callable[[], float] = time.time,
) -> FastAPI:
    """The whole service for these settings; nothing is shared between two apps.

    With `ui_on_demand` (the command line) the web UI's routes and templates load on
    the first page view: an install that is only scraped or called never holds them.
    `clock` is the wall clock of the licence and of sessions and invitations (tests move it).
    With `freeze_heap` (the command line) everything alive once the features are loaded
    is moved out of the garbage collector's sight (`gc.freeze`): the ~1M objects of
    FastAPI, pydantic and SQLAlchemy were re-scanned by every full collection, a 70 ms
    pause of the loop (bench/webhooks.py's p99), and young collections run less often;
    and again after each change of the polled connections (kit/heap_freeze.py). Not for
    tests, which build many apps in one process and would never free the frozen ones.
    """
    try:
        services, core = build_services(settings, clock=clock)
    except SqliteFileInUse as exc:
        raise StartupError(str(exc)) from None

    lifespan = _lifespan(
        services,
        core,
        embedded_valkey_port=embedded_valkey_port,
        features_in_background=features_in_background,
        with_ui=not ui_on_demand,
        freeze_heap=freeze_heap,
    )
    return _app(lifespan, services, core, ui_on_demand=ui_on_demand)


def _lifespan(
    services: Services,
    core: tuple[Part, ...],
    *,
    embedded_valkey_port: int | None,
    features_in_background: bool,
    with_ui: bool,
    freeze_heap: bool,
) -> Callable[[FastAPI], contextlib.AbstractAsyncContextManager[None]]:
    """Start: storage and the checks, the core parts' tasks, then the features (awaited
    before the first request, or in the background for the command line). Stop: the
    tasks cancelled, then `_stop`."""

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        try:
            await _start(services, embedded_valkey_port=embedded_valkey_port)
        except BaseException:
            await _stop(app, services, core)
            raise
        background: list[asyncio.Task[None]] = []
        await _start_parts(core, background)
        features = asyncio.create_task(
            _install_features(
                app,
                services,
                in_thread=features_in_background,
                with_ui=with_ui,
                freeze_heap=freeze_heap,
            ),
            name="install-features",
        )
        background.append(features)
        if not features_in_background:
            await features
        mcp: McpEndpoint = app.state.mcp
        try:
            async with mcp.running():
                yield
        finally:
            for task in background:
                task.cancel()
            await asyncio.gather(*background, return_exceptions=True)
            await _stop(app, services, core)

    return lifespan


def _app(
    lifespan: Callable[[FastAPI], contextlib.AbstractAsyncContextManager[None]],
    services: Services,
    core: tuple[Part, ...],
    *,
    ui_on_demand: bool,
) -> FastAPI:
    """The app, its state, middleware and core routes: the core parts' routers, then the
    docs, the MCP endpoint, the static files and the catch-alls."""
    app = FastAPI(
        title="svc-monitor",
        version=__version__,
        description="Monitoring for Valkey and Redis: connections, health, metrics and alerts.",
        openapi_url=OPENAPI_URL,
        openapi_tags=openapi_tags(webhooks=WEBHOOKS_TAG),
        generate_unique_id_function=operation_id,
        docs_url=None,
        redoc_url=None,
        lifespan=lifespan,
        # Every route, including those the features and the UI add later, passes here
        # first: auth/roles.py says who may call it.
        dependencies=[Depends(authorize)],
    )
    app.state.services = services
    app.state.features = None
    app.state.registry = None
    app.state.feature_tasks = []
    app.state.parts = ()
    app.state.heap_freezer = None
    app.state.ui_installed = False
    if ui_on_demand:
        app.add_middleware(UiOnDemand)  # innermost: it only adds routes before routing
    install_access(app)
    install_error_handlers(app)  # last: its ErrorPolicy is the outermost middleware
    app.add_exception_handler(PageRefused, _page_refused)
    _include_routers(app, core)
    mount_docs(app)
    # The MCP endpoint: its tools call this app's own routes with the caller's token.
    app.state.mcp = mcp = McpEndpoint(app)
    app.router.routes.append(Route(MCP_PATH, mcp, methods=["GET", "POST", "DELETE"]))
    install_openapi(app)
    mount_static(app)
    app.add_api_route(
        API_CATCH_ALL,
        _starting,
        methods=["GET", "POST", "PUT", "PATCH", "DELETE"],
        include_in_schema=False,
    )
    app.add_api_route(
        UI_CATCH_ALL,
        _ui_catch_all,
        methods=["GET", "POST", "PUT", "PATCH", "DELETE"],
        include_in_schema=False,
    )
    return app


def _include_routers(app: FastAPI, parts: Sequence[Part]) -> None:
    """The parts' routers, in part order: each one's under /api, then its root ones."""
    for part in parts:
        for router in part.routers:
            app.include_router(router, prefix="/api")
        for router in part.root_routers:
            app.include_router(router)


async def _start_parts(parts: Sequence[Part], tasks: list[asyncio.Task[None]]) -> None:
    """The parts' tasks, started in part order; a part's start hook is awaited first."""
    for part in parts:
        if part.start is not None:
            await part.start()
        tasks.extend(asyncio.create_task(task.run(), name=task.name) for task in part.tasks)


async def _page_refused(_: Request, exc: Exception) -> Response:
    assert isinstance(exc, PageRefused)
    return refused_page(exc.message)


async def _starting(request: Request) -> JSONResponse:
    """Every /api path no route claims: 503 while the features load, then a JSON 404."""
    if request.app.state.features is None:
        body = error_body(503, "svc-monitor is still starting; retry in a moment")
        return JSONResponse(body, 503, headers={"Retry-After": "1"})
    return JSONResponse(error_body(404, "Not Found"), 404)


async def _ui_catch_all(request: Request) -> Response:
    """Every page no route claims: a self-reloading page while the features load; the
    first view after that loads the UI and asks again; then an HTML 404. Any other
    method on a path no route has is a JSON 404 (not a 405 that offers GET), or a 503
    with Retry-After while the features load (a form posted to a replica just started)."""
    app: FastAPI = request.app
    if request.method != "GET":
        if app.state.features is None:
            body = error_body(503, "svc-monitor is still starting; retry in a moment")
            return JSONResponse(body, 503, headers={"Retry-After": "1"})
        return JSONResponse(error_body(404, "Not Found"), 404)
    if app.state.features is None:
        return plain_page(starting=True)
    if not app.state.ui_installed:
        _install_ui(app)
        query = f"?{request.url.query}" if request.url.query else ""
        return RedirectResponse(request.url.path + query, status_code=307)
    return plain_page(starting=False)


async def _install_features(
    app: FastAPI, services: Services, *, in_thread: bool, with_ui: bool, freeze_heap: bool
) -> None:
    """Import the feature domains, build them, add their polls and routes."""
    name = "svc_monitor.features"
    module: ModuleType = (
        await asyncio.to_thread(importlib.import_module, name)
        if in_thread
        else importlib.import_module(name)
    )
    features, registry, parts = module.build_features(services)
    if services.db.kind is StorageType.MEMORY:
        await services.db.migrate()  # their tables registered on import: create them
    catch_alls = _take_catch_alls(app)
    _include_routers(app, parts)
    app.router.routes.extend(catch_alls)  # still last, after the feature routes
    app.openapi_schema = None
    app.state.features = features
    app.state.registry = registry
    app.state.parts = parts
    if with_ui:
        _install_ui(app)
    await _start_parts(parts, app.state.feature_tasks)
    if freeze_heap:
        # Frozen now and again after each change of the polled connections (kit/heap_freeze.py).
        freezer = HeapFreezer()
        freezer.start()
        features.supervisor.on_change(freezer.changed)
        app.state.heap_freezer = freezer
        # A young collection every 700 new objects, with every poll parsing a fresh INFO
        # reply, was the longest single step of the event loop at a hundred connections
        # (20-45 ms, bench/poll_fanout.py); every 50,000 it is about 3 ms, for the same CPU
        # and ~3 MB more held between collections.
        gc.set_threshold(50_000, 20, 20)


class UiOnDemand:
    """With the UI loaded on demand (the command line), a request under /ui/ loads it
    before routing, whatever its method: those are the pages' htmx requests and form
    posts, and behind a load balancer the first request a restarted replica gets may be
    one, sent from a page another replica served. (A page view is the catch-all's: it
    loads the UI and asks again.)"""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            app: FastAPI = scope["app"]
            if not app.state.ui_installed and app.state.features is not None:
                path: str = scope["path"]
                root: str = scope.get("root_path", "")
                if path.removeprefix(root).startswith(UI_PREFIX):
                    _install_ui(app)
        await self.app(scope, receive, send)


def _install_ui(app: FastAPI) -> None:
    """Add the UI's pages (before the catch-alls) and its templates; once per app."""
    if app.state.ui_installed:
        return
    app.state.ui_installed = True  # set first: no await below, so no second install
    from svc_monitor.web import ui

    catch_alls = _take_catch_alls(app)
    for router in ui.ROUTERS:
        app.include_router(router)
    app.router.routes.extend(catch_alls)
    app.state.templates = ui.build_templates()


def _take_catch_alls(app: FastAPI) -> list[BaseRoute]:
    paths = (API_CATCH_ALL, UI_CATCH_ALL)
    routes = [r for r in app.router.routes if getattr(r, "path", "") in paths]
    for route in routes:
        app.router.routes.remove(route)
    return routes


async def _stop(app: FastAPI, services: Services, core: tuple[Part, ...]) -> None:
    """The feature parts' stop requests (the poll supervisor's, before the cancel: see
    PollLoop.stop), their tasks cancelled, their stop hooks in reverse part order (a part
    stops before those it was built on); then the core parts' in STOP_ORDER
    (core_parts.py); storage closes last."""
    freezer: HeapFreezer | None = app.state.heap_freezer
    if freezer is not None:
        freezer.stop()
    parts: tuple[Part, ...] = app.state.parts
    for part in parts:
        if part.stop_request is not None:
            part.stop_request()
    tasks: list[asyncio.Task[None]] = app.state.feature_tasks
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    for part in (*reversed(parts), *stop_order(core)):
        if part.stop is not None:
            await part.stop()
    await services.db.close()


async def _start(services: Services, *, embedded_valkey_port: int | None) -> None:
    services.license.start()
    await services.db.migrate()
    await services.license.adopt_shared()  # an activation made on another replica
    if not services.secrets.encrypting:
        logger.warning("ENCRYPTION_KEY is not set: connection passwords are stored in plain text")
    await _check_encryption_key(services)
    await services.connections.start(embedded_port=embedded_valkey_port)


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
    try:
        services, _ = build_services(settings)
    except SqliteFileInUse as exc:
        raise StartupError(str(exc)) from None
    try:
        await services.db.migrate()
        await _check_encryption_key(services)
    finally:
        await services.db.close()
