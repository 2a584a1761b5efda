"""Vector search: each search index of the selected connection as the vector index poll
last read it (documents, memory, progress, failures, vector fields), and search latency
per bucket with its source and each index's SLA.

Reads go through VectorSearchService, as GET /api/vector-search/indexes does: a server
without a search engine shows why (the 501's words), a push connection the shell's
needs-live message (the page is live-only).
"""

from fastapi import APIRouter
from fastapi.responses import HTMLResponse

from svc_monitor.vector_search.schemas import SearchLatencyRead, VectorIndexesRead
from svc_monitor.web.dependencies import UiDep
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
