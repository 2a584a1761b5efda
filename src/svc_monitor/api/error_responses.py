"""The one place errors become HTTP responses, and the body every error answer has.

AppError (errors.py) and Starlette's HTTPException (routing 404/405) render as the spec's
`{statusCode, message, error}`; a RequestValidationError becomes a 422 that names the
field; anything else is a bug, logged with its traceback and answered with a plain 500.
"""

import logging
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from svc_monitor.errors import AppError

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


async def _unexpected(_: Request, exc: Exception) -> JSONResponse:
    logger.error("unhandled error", exc_info=exc)
    return JSONResponse(error_body(500, "Internal server error"), 500)


def install_error_handlers(app: FastAPI) -> None:
    add_error_schema(app)
    app.add_exception_handler(AppError, _app_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(Exception, _unexpected)
