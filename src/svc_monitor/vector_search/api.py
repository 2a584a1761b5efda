"""Vector search routes (under /api): the search indexes of a live connection, as the
last vector index poll read them, and their history."""

from typing import Annotated

from fastapi import APIRouter, Path, Query

from svc_monitor.api.error_responses import error_responses
from svc_monitor.api.params import From, HistoryPage, To
from svc_monitor.connections.dependencies import LiveConnection
from svc_monitor.vector_search.dependencies import VectorSearchDep
from svc_monitor.vector_search.schemas import (
    KnnSearchRead,
    KnnSearchRequest,
    ProfileRead,
    ProfileRequest,
    SearchLatencyRead,
    SearchLatencyTrendRead,
    TextQueryRead,
    TextQueryRequest,
    VectorIndexesRead,
    VectorIndexSnapshotRead,
)

router = APIRouter(tags=["vector search"])

# 409: a push connection (no command reaches it); 501: no search engine on the server.
_ERRORS = error_responses(404, 409, 422, 501)


@router.get("/vector-search/indexes", response_model=VectorIndexesRead, responses=_ERRORS)
async def list_vector_indexes(
    connection: LiveConnection, vector_search: VectorSearchDep
) -> VectorIndexesRead:
    """Every search index of the selected connection with its documents, memory, indexing
    failures, progress and vector fields, as the last vector index poll read them
    (every `vectorIndexPollIntervalMs`, 60 s by default). 501 where no search engine
    (RediSearch, Valkey Search, Redis 8's search) answers FT._LIST."""
    return await vector_search.indexes(connection)


@router.get("/vector-search/latency", response_model=SearchLatencyRead, responses=_ERRORS)
async def get_search_latency(
    connection: LiveConnection, vector_search: VectorSearchDep
) -> SearchLatencyRead:
    """Search latency of the selected connection over the last SEARCH_LATENCY_WINDOW_MS
    (15 min), from its last vector index pass: p50/p95/p99 of every FT.SEARCH and
    FT.AGGREGATE call from the server's LATENCY HISTOGRAM, and per index (plus the reads
    and writes beside them) from the stored slow log, which sees only the calls over its
    threshold; each bucket names its source. With Pro, each index's SLA as last judged."""
    return await vector_search.latency(connection)


@router.get(
    "/vector-search/latency/trend", response_model=SearchLatencyTrendRead, responses=_ERRORS
)
async def get_search_latency_trend(
    connection: LiveConnection,
    vector_search: VectorSearchDep,
    bucket: Annotated[
        str,
        Query(
            min_length=1,
            max_length=300,
            description="FT.SEARCH:<index>, FT.AGGREGATE:<index>, read or write",
        ),
    ],
    since: From = None,
    until: To = None,
    bucket_ms: Annotated[
        int, Query(alias="bucketMs", ge=1000, le=86_400_000, description="ms per point")
    ] = 60_000,
) -> SearchLatencyTrendRead:
    """One slow-log bucket's p50/p95/p99 over time, a point per `bucketMs` (60 s by
    default) that holds entries, from `from` to `to` (the last hour by default; at most
    1,440 points). From the stored slow log: the slow tail only, as the advisory says."""
    return await vector_search.trend(
        connection, bucket, since=since, until=until, bucket_ms=bucket_ms
    )


@router.get(
    "/vector-search/snapshots", response_model=list[VectorIndexSnapshotRead], responses=_ERRORS
)
async def list_vector_index_snapshots(
    connection: LiveConnection,
    vector_search: VectorSearchDep,
    page: HistoryPage,
    index: Annotated[
        str | None, Query(max_length=256, description="one index; absent means all")
    ] = None,
) -> list[VectorIndexSnapshotRead]:
    """Stored vector index snapshots of the selected connection, oldest first: one row per
    index per poll, kept for the retention window."""
    return await vector_search.history(
        connection,
        index,
        since=page.since,
        until=page.until,
        limit=page.limit,
        offset=page.offset,
    )


@router.post(
    "/vector-search/indexes/{name}/search",
    response_model=KnnSearchRead,
    responses=error_responses(404, 409, 422, 501, 503),
)
async def knn_search(
    connection: LiveConnection,
    vector_search: VectorSearchDep,
    name: Annotated[str, Path(max_length=256, description="the index")],
    body: KnnSearchRequest,
) -> KnnSearchRead:
    """The `k` documents of the index nearest to a vector (`vector`, as many floats as the
    field has dimensions) or to the vector a hash holds (`sourceKey`: "find similar"),
    nearest first, optionally among those `filter` matches. Read-only: every signed-in
    role may search. At most 100 results; the server gives the search 2 s."""
    return await vector_search.knn(connection, name, body)


@router.post(
    "/vector-search/indexes/{name}/query",
    response_model=TextQueryRead,
    responses=error_responses(404, 409, 422, 501, 503),
)
async def text_query(
    connection: LiveConnection,
    vector_search: VectorSearchDep,
    name: Annotated[str, Path(max_length=256, description="the index")],
    body: TextQueryRequest,
) -> TextQueryRead:
    """The documents of the index a query matches (full text, tags, numeric ranges: the
    engine's query syntax, DIALECT 2), in the engine's order. Read-only: every signed-in
    role may query. At most 100 results; the server gives the query 2 s."""
    return await vector_search.text_query(connection, name, body)


@router.post(
    "/vector-search/indexes/{name}/profile",
    response_model=ProfileRead,
    responses=error_responses(404, 409, 422, 501, 503),
)
async def profile_query(
    connection: LiveConnection,
    vector_search: VectorSearchDep,
    name: Annotated[str, Path(max_length=256, description="the index")],
    body: ProfileRequest,
) -> ProfileRead:
    """FT.PROFILE of a query: where the engine spent its time (parsing, each iterator,
    each result processor). Read-only: every signed-in role may profile. 501 where the
    search engine has no FT.PROFILE."""
    return await vector_search.profile(connection, name, body)
