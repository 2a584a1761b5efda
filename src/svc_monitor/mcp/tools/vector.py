"""Vector search: each search index's health, as the vector index poll last read it."""

from typing import Any

from svc_monitor.mcp.api_caller import ApiCaller
from svc_monitor.mcp.output import iso, listing, number
from svc_monitor.mcp.tools.spec import Scoped, ToolSpec
from svc_monitor.mcp.untrusted import data


async def vector_indexes(api: ApiCaller, params: Scoped) -> str:
    body = await api.get("/api/vector-search/indexes", connection=params.connection)
    module = body.get("module") or {}
    engine = f"{data(module.get('name'))} {data(module.get('version'))}" if module else "unknown"

    def line(index: dict[str, Any]) -> str:
        fields = ", ".join(
            f"{data(f.get('name'))} {data(f.get('algorithm'))} {number(f.get('dimensions'))}d "
            f"{data(f.get('distanceMetric'))}"
            for f in index.get("vectorFields") or []
        )
        error = index.get("lastError")
        return (
            f"{data(index.get('name'))}: {number(index.get('docs'), digits=0)} docs, "
            f"{number(index.get('memoryBytes'), 'bytes', digits=0)}, "
            f"{number(index.get('percentIndexed'), '%')} indexed, "
            f"{number(index.get('indexingFailures'), digits=0)} indexing failures"
            + (f" (last: {data(error)})" if error else "")
            + (f"; vectors: {fields}" if fields else "")
        )

    return listing(
        f"Search indexes (engine {engine}, read {iso(body.get('capturedAt'))})",
        body.get("indexes") or [],
        line,
        empty="no search index on this server",
    )


TOOLS = [
    ToolSpec(
        "vector_indexes",
        "Each search index's documents, memory, indexing failures, percent indexed and "
        "vector fields (where a search engine such as RediSearch or Valkey Search is loaded).",
        vector_indexes,
    ),
]
