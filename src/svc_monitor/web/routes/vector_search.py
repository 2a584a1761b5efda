"""Vector search: each search index of the selected connection as the vector index poll
last read it (documents, memory, progress, failures, vector fields) with its history
charts, search latency per bucket with its source and each index's SLA, and the search
and profile forms (read-only, so every role may use them).

Reads go through VectorSearchService, as GET /api/vector-search/indexes does: a server
without a search engine shows why (the 501's words), a push connection the shell's
needs-live message (the page is live-only).
"""

from typing import Any, TypeVar

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse
from pydantic import BaseModel, ValidationError

from svc_monitor.errors import AppError
from svc_monitor.vector_search.schemas import (
    KnnSearchRequest,
    ProfileRequest,
    SearchLatencyRead,
    TextQueryRequest,
    VectorIndexesRead,
)
from svc_monitor.web.dependencies import FromThisPage, Ui, UiDep
from svc_monitor.web.forms import read_form
from svc_monitor.web.live import load_live
from svc_monitor.web.pages import Page
from svc_monitor.web.sections import Section

PAGE = Page("vector_search", "/vector-search", "Vector search", live_only=True)
router = APIRouter(include_in_schema=False)


@router.get("/vector-search")
async def vector_search_page(ui: UiDep) -> HTMLResponse:
    """The search indexes of the selected connection."""
    connection = ui.shell.connection
    indexes: Section[VectorIndexesRead] | None = None
    latency: Section[SearchLatencyRead] | None = None
    if connection is not None:
        service = ui.features.vector_search
        indexes = await load_live(ui.shell, lambda: service.indexes(connection))
        if indexes.ok:
            latency = await load_live(ui.shell, lambda: service.latency(connection))
    return ui.page(PAGE, "vector_search/page.html", indexes=indexes, latency=latency)


# The forms are small: an index name, a query, a key.
FORM_BYTES = 16_384


@router.post("/ui/vector-search/search", dependencies=[FromThisPage])
async def search_form(request: Request, ui: UiDep) -> HTMLResponse:
    """The search form: a text query, or the documents most similar to a key's vector."""
    values = await read_form(request, limit=FORM_BYTES)
    index = values.get("index", "").strip()
    mode = values.get("mode", "query")
    service = ui.features.vector_search
    try:
        connection = _connection(ui)
        if mode == "similar":
            knn = _parsed(KnnSearchRequest, {"sourceKey": values.get("sourceKey") or None,
                                             "k": _whole(values.get("k", "10"))})  # fmt: skip
            found: Any = await service.knn(connection, index, knn)
        else:
            query = _parsed(TextQueryRequest, {"query": values.get("query", ""),
                                               "limit": _whole(values.get("k", "10"))})  # fmt: skip
            found = await service.text_query(connection, index, query)
    except AppError as exc:
        return ui.fragment("vector_search/result.html", error=exc.message, found=None, mode=mode)
    return ui.fragment("vector_search/result.html", error=None, found=found, mode=mode)


@router.post("/ui/vector-search/profile", dependencies=[FromThisPage])
async def profile_form(request: Request, ui: UiDep) -> HTMLResponse:
    """The profile form: where a query spends its time (FT.PROFILE)."""
    values = await read_form(request, limit=FORM_BYTES)
    index = values.get("index", "").strip()
    try:
        connection = _connection(ui)
        body = _parsed(ProfileRequest, {"query": values.get("query", "")})
        found = await ui.features.vector_search.profile(connection, index, body)
    except AppError as exc:
        return ui.fragment("vector_search/profile.html", error=exc.message, found=None)
    return ui.fragment("vector_search/profile.html", error=None, found=found)


def _connection(ui: Ui) -> Any:
    connection = ui.shell.connection
    if connection is None:
        raise _FormError("Choose a connection first.")
    return connection


class _FormError(AppError):
    status_code = 422


def _whole(text: str) -> int | str:
    text = text.strip()
    return int(text) if text.isascii() and text.isdigit() and len(text) < 10 else text


Model = TypeVar("Model", bound=BaseModel)


def _parsed(model: type[Model], data: dict[str, Any]) -> Model:
    """The API's own request model for the form, so the form takes what the API takes;
    its first problem, naming the field, as the form's answer."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(p) for p in error["loc"]) or "form"
        raise _FormError(f"{where}: {error['msg']}") from None
