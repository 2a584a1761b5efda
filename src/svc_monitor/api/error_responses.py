"""The one place errors become HTTP responses, and the body every error answer has.

AppError (errors.py) and Starlette's HTTPException (routing 404/405) render as the one
error body `{statusCode, message, error}` (docs/features/http-api.md); a
RequestValidationError becomes a 422 that names the field. What a handler did not expect
is answered by ErrorPolicy, by its class:

    EngineError (a monitored instance down, hung, refusing)  503 naming the instance
    storage out: unreachable, read-only, full (failures.py)   503 with Retry-After
    a number or character storage cannot keep                 422
    anything else: a bug                                      500 with a correlation id

A 500 is logged once, with its traceback and the correlation id its body carries; the
others are expected on a bad day and logged in one line. Every one of them keeps the
connection open. The background loops (polls, flushes, exports) log what stops a pass
with logger.exception; `quiet_expected_failures` turns those of the expected kinds into
one warning line too, so a bad day's log holds no traceback but a bug's.
"""

import logging
import uuid
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from sqlalchemy.exc import DataError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from svc_monitor.engine.errors import EngineError
from svc_monitor.errors import AppError
from svc_monitor.storage.failures import outage_reason

logger = logging.getLogger(__name__)


class ErrorBody(BaseModel):
    """The body of every error response."""

    statusCode: int
    message: str
    error: str
    fields: list[str] | None = None
    feature: str | None = Field(None, description="403 from a feature gate: the locked feature")
    requiredTier: str | None = Field(None, description="403 from a feature gate")
    currentTier: str | None = Field(None, description="403 from a feature gate")
    errorKind: str | None = Field(None, description="400 from a connection test: the failure")
    hint: str | None = Field(None, description="400 from a connection test: what to change")
    correlationId: str | None = Field(
        None, description="500: the id the service's log gives this error under"
    )


def error_body(status_code: int, message: str, **extra: Any) -> dict[str, Any]:
    return {
        "statusCode": status_code,
        "message": message,
        "error": HTTPStatus(status_code).phrase,
        **extra,
    }


def error_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The `responses=` entry of a route, so OpenAPI lists the errors it can answer.

    A reference to one shared schema rather than `"model": ErrorBody`: with a model,
    FastAPI builds a pydantic adapter per status per route at import, which was ~150 ms
    of start-up across the API (bench/startup.py). `add_error_schema` registers it.
    """
    return {s: {"description": HTTPStatus(s).phrase, "content": _ERROR_CONTENT} for s in statuses}


_ERROR_CONTENT = {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}}


def add_error_schema(app: FastAPI) -> None:
    """Put ErrorBody in the OpenAPI components that error_responses refers to."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = build()
            components = schema.setdefault("components", {}).setdefault("schemas", {})
            components["ErrorBody"] = ErrorBody.model_json_schema(
                ref_template="#/components/schemas/{model}"
            )
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


async def _app_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, AppError)
    # The same shape as a schema 422: the names of the fields at fault, as a list.
    extra = {"fields": [exc.field]} if exc.field else {}
    body = error_body(exc.status_code, exc.message, **exc.extra, **extra)
    return JSONResponse(body, exc.status_code, headers=exc.headers)


async def _http_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    return JSONResponse(
        error_body(exc.status_code, str(exc.detail)), exc.status_code, headers=exc.headers
    )


async def _validation_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    problems = [_describe(item) for item in exc.errors()]
    fields = [p[0] for p in problems if p[0]]
    message = "; ".join(f"{name}: {text}" if name else text for name, text in problems)
    return JSONResponse(error_body(422, message, fields=fields), 422)


def _describe(item: Any) -> tuple[str, str]:
    # loc is ("body", "port") or ("header", "x-connection-id"): the first part is where, not what.
    loc = [str(p) for p in item.get("loc", ()) if p not in ("body", "query", "path", "header")]
    text = str(item.get("msg", "invalid")).removeprefix("Value error, ")
    return ".".join(loc), text


RETRY_AFTER_S = 5
_STORAGE = {
    "unavailable": "Storage is unavailable; try again shortly",
    "read-only": "Storage is read-only; nothing was changed",
    "full": "Storage is full; nothing was changed",
}


def answer_for(exc: Exception, where: str) -> JSONResponse:
    """The designed answer to an exception no handler took (see the module's table)."""
    retry = {"Retry-After": str(RETRY_AFTER_S)}
    if isinstance(exc, EngineError):
        logger.info("%s: the instance did not answer: %s", where, exc.message)
        body = error_body(503, f"The instance did not answer: {exc.message}", errorKind=exc.kind)
        return JSONResponse(body, 503, headers=retry)
    reason = outage_reason(exc)
    if reason is not None:
        logger.warning("%s: storage %s (%s); answered 503", where, reason, type(exc).__name__)
        return JSONResponse(error_body(503, _STORAGE[reason]), 503, headers=retry)
    if isinstance(exc, OverflowError | DataError) or "null byte" in str(exc):
        logger.info("%s: refused a value storage cannot keep (%s)", where, type(exc).__name__)
        message = "A value is out of range, or holds a character that cannot be stored"
        return JSONResponse(error_body(422, message), 422)
    correlation = uuid.uuid4().hex[:16]
    logger.error("%s: unhandled error, correlation id %s", where, correlation, exc_info=exc)
    body = error_body(
        500, f"Internal server error (correlation id {correlation})", correlationId=correlation
    )
    return JSONResponse(body, 500)


def expected_failure(exc: BaseException) -> str | None:
    """Why `exc` is a failure of a bad day rather than a bug; None for a bug."""
    if isinstance(exc, EngineError):
        return f"the instance did not answer: {exc.message}"
    reason = outage_reason(exc)
    if reason is not None:
        return f"storage {reason} ({type(exc).__name__})"
    return None


def quiet_expected_failures() -> None:
    """Log records whose exception is an expected failure lose the traceback and say
    why in one line, at most a warning. Process-wide and idempotent: every logger's
    records are made by the one record factory."""
    previous = logging.getLogRecordFactory()
    if getattr(previous, "quiets_expected_failures", False):
        return

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        exc = record.exc_info[1] if record.exc_info else None
        if exc is not None and (why := expected_failure(exc)) is not None:
            record.exc_info = None
            record.msg = f"{record.msg}: {why.replace('%', '%%')}"
            if record.levelno > logging.WARNING:
                record.levelno, record.levelname = logging.WARNING, "WARNING"
        return record

    factory.quiets_expected_failures = True  # type: ignore[attr-defined]
    logging.setLogRecordFactory(factory)


class ErrorPolicy:
    """Plain ASGI around the app and its other middleware: an exception nothing else
    answered gets its designed answer here (answer_for). Starlette's own last-resort
    handler re-raises after its 500, and the server then drops the keep-alive
    connection; this one does not. A response already started cannot be taken back: that
    exception goes on up."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def sending(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, sending)
        except Exception as exc:
            if started:
                raise
            where = f"{scope.get('method', '')} {scope.get('path', '')}"
            await answer_for(exc, where)(scope, receive, send)


def install_error_handlers(app: FastAPI) -> None:
    """The handlers, and ErrorPolicy: call it after every other middleware is added, so
    the policy is the outermost."""
    add_error_schema(app)
    quiet_expected_failures()
    app.add_exception_handler(AppError, _app_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_middleware(ErrorPolicy)
