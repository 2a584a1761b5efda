"""Vector search: each search index's health, as the vector index poll last read it, and
search latency per index with its source."""

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


# Ours, not the API's text: the tool says it whatever the API answers.
ADVISORY = (
    "Slow-log figures count only the calls over the slow-log threshold (the slow tail, not "
    "the workload); histogram figures count every call, each percentile its bucket's upper "
    "bound."
)


async def search_latency(api: ApiCaller, params: Scoped) -> str:
    body = await api.get("/api/vector-search/latency", connection=params.connection)
    threshold = body.get("slowLogThresholdUs")
    window_ms = body.get("windowMs")
    window = f"{window_ms // 60_000} min" if isinstance(window_ms, int) else "the window"

    def line(bucket: dict[str, Any]) -> str:
        health = {True: "; unhealthy (p50 over the threshold)", False: "", None: ""}
        source = (
            "histogram, every call"
            if bucket.get("source") == "histogram"
            else f"{data(body.get('slowLog'))}, slow tail only"
        )
        return (
            f"{data(bucket.get('bucket'))} ({source}): p50 {number(bucket.get('p50Us'), 'µs')}, "
            f"p95 {number(bucket.get('p95Us'), 'µs')}, p99 {number(bucket.get('p99Us'), 'µs')} "
            f"over {number(bucket.get('count'), digits=0)} calls"
            + health.get(bucket.get("unhealthy"), "")
            + ("; the index was backfilling" if bucket.get("backfilling") else "")
        )

    slas = body.get("slas")
    sla_lines = (
        []
        if not slas
        else [
            f"SLA {data(s.get('index'))}: p99 {number(s.get('p99Us'), 'µs')} against "
            f"{number(s.get('thresholdUs'), 'µs')} ({data(s.get('source'))}): "
            + ("BREACHED" if s.get("breached") else "met")
            for s in slas
        ]
    )
    heading = (
        f"Search latency over {window} (read {iso(body.get('capturedAt'))}; slow log over "
        f"{number(threshold, 'µs')}). {ADVISORY}"
    )
    text = listing(heading, body.get("buckets") or [], line, empty="no search counted yet")
    return "\n".join([text, *sla_lines])


TOOLS = [
    ToolSpec(
        "vector_indexes",
        "Each search index's documents, memory, indexing failures, percent indexed and "
        "vector fields (where a search engine such as RediSearch or Valkey Search is loaded).",
        vector_indexes,
    ),
    ToolSpec(
        "search_latency",
        "Search latency per index: p50/p95/p99 of every FT.SEARCH and FT.AGGREGATE call from "
        "the server's latency histogram, and per index, reads and writes from the slow log "
        "(the slow tail only), each with its source; unhealthy buckets, backfilling "
        "indexes and, with Pro, each index's SLA.",
        search_latency,
    ),
]
