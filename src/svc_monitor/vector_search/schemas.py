"""Bodies of the vector search routes (docs/features/vector-search.md)."""

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


class VectorFieldRead(BaseModel):
    """One vector attribute of an index."""

    name: str
    algorithm: str | None = Field(description="HNSW, FLAT, ...; null when not stated")
    dataType: str | None = Field(description="FLOAT32, FLOAT64, ...")
    dimensions: int | None
    distanceMetric: str | None = Field(description="COSINE, L2 or IP")


class VectorIndexRead(BaseModel):
    """One search index as its FT.INFO showed it. A figure the engine does not report is
    null (Valkey Search reports no per-index sizes), never 0."""

    name: str
    node: str | None = Field(
        description="for a cluster, the node (host:port) the index was read from; each "
        "shard holds its own indexes. Null for a server that is not a cluster"
    )
    docs: int | None = Field(description="documents in the index (num_docs)")
    records: int | None = Field(description="index records (num_records)")
    indexingFailures: int | None = Field(
        description="documents the engine failed to index since the index was created "
        "(hash_indexing_failures)"
    )
    percentIndexed: float | None = Field(
        description="how much of the existing keys the backfill has indexed, 0 to 100"
    )
    indexing: bool | None = Field(description="a backfill of existing keys is running")
    memoryBytes: int | None = Field(description="the index's memory, its vector indexes included")
    vectorMemoryBytes: int | None = Field(description="the vector indexes' memory")
    vectorFields: list[VectorFieldRead]
    lastError: str | None = Field(description="the newest indexing error the engine kept")


class SearchModuleRead(BaseModel):
    """The search engine loaded on the server, as MODULE LIST names it."""

    name: str
    version: str | None = Field(description="as MODULE LIST gives it (21005 is 2.10.5)")


class VectorIndexesRead(BaseModel):
    """The indexes of the selected connection as the last vector index poll read them."""

    module: SearchModuleRead | None = Field(
        description="null when MODULE LIST is refused (FT._LIST still answered)"
    )
    capturedAt: int | None = Field(description="epoch ms of that poll; null before the first")
    pollIntervalMs: int = Field(description="vectorIndexPollIntervalMs in force")
    indexes: list[VectorIndexRead]


class VectorIndexSnapshotRead(VectorIndexRead):
    """One index as one poll saw it."""

    id: int
    capturedAt: int = Field(description="epoch ms of the poll")


# Bounds of a search request: what one request may ask of the server's main thread.
MAX_DIMENSIONS = 4096
MAX_K = 100
SEARCH_TIMEOUT_MS = 2000


class KnnSearchRequest(BaseModel):
    """The nearest documents to a vector given as floats, or to the vector a key holds."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={"examples": [{"sourceKey": "doc:42", "k": 5}]},
    )

    vector: list[float] | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_DIMENSIONS,
        description="the query vector; as many floats as the field has dimensions",
    )
    sourceKey: str | None = Field(
        default=None,
        min_length=1,
        max_length=1024,
        description="a hash whose vector field is the query ('find similar'); instead of vector",
    )
    field: str | None = Field(
        default=None,
        min_length=1,
        max_length=256,
        description="the vector field; absent means the index's first",
    )
    k: int = Field(default=10, ge=1, le=MAX_K, strict=True, description="results wanted")
    filter: str = Field(
        default="*",
        min_length=1,
        max_length=1024,
        description="a query the neighbours must also match, e.g. @tag:{news}",
    )

    @field_validator("filter")
    @classmethod
    def _no_second_query(cls, value: str) -> str:
        # The filter is the KNN query's prefilter: a "=>" of its own would be a second
        # vector clause, outside the request's bounds on k.
        if "=>" in value:
            raise ValueError("a filter cannot hold a vector query of its own ('=>')")
        return value

    @model_validator(mode="after")
    def _one_query(self) -> "KnnSearchRequest":
        if (self.vector is None) == (self.sourceKey is None):
            raise ValueError("give either vector or sourceKey")
        return self


class SearchHit(BaseModel):
    """One document found. Binary values (vectors) are left out of `fields`."""

    key: str
    score: float | None = Field(description="the distance to the query (smaller is nearer)")
    fields: dict[str, str]


class KnnSearchRead(BaseModel):
    """The nearest documents, nearest first."""

    index: str
    field: str
    k: int
    tookMs: float = Field(description="the round trip of the search, in ms")
    hits: list[SearchHit]


class TextQueryRequest(BaseModel):
    """A search query, as FT.SEARCH takes it (DIALECT 2)."""

    model_config = ConfigDict(
        extra="forbid", json_schema_extra={"examples": [{"query": "@title:(red shoes)"}]}
    )

    query: str = Field(min_length=1, max_length=1024, description="e.g. @title:(red shoes)")
    limit: int = Field(default=10, ge=1, le=MAX_K, strict=True, description="results wanted")
    offset: int = Field(default=0, ge=0, le=10_000, strict=True, description="results skipped")

    @field_validator("query")
    @classmethod
    def _text_only(cls, value: str) -> str:
        return _no_vector_clause(value)


class TextQueryRead(BaseModel):
    """The documents a query matched, in the engine's order."""

    index: str
    total: int = Field(description="documents the query matched, beyond those returned")
    tookMs: float = Field(description="the round trip of the search, in ms")
    hits: list[SearchHit]


class ProfileRequest(BaseModel):
    """A query to profile."""

    model_config = ConfigDict(
        extra="forbid", json_schema_extra={"examples": [{"query": "@title:(red shoes)"}]}
    )

    query: str = Field(min_length=1, max_length=1024)
    limit: int = Field(default=10, ge=1, le=MAX_K, strict=True)

    @field_validator("query")
    @classmethod
    def _text_only(cls, value: str) -> str:
        return _no_vector_clause(value)


class ProfileRead(BaseModel):
    """FT.PROFILE's account of one query: where its time went, as the engine tells it."""

    index: str
    total: int
    profile: Any = Field(description="the engine's profile, name-value lists read as objects")


def _no_vector_clause(query: str) -> str:
    # A vector clause needs its vector as a parameter and its k bounded: that is the KNN
    # route's work.
    if "=>" in query:
        raise ValueError("a vector query ('=>') goes to the search route with its vector")
    return query


class LatencyBucketRead(BaseModel):
    """p50/p95/p99 of one bucket over the latency window, and where they come from."""

    bucket: str = Field(
        description="FT.SEARCH or FT.AGGREGATE (histogram: every call of the command), "
        "FT.SEARCH:<index> or FT.AGGREGATE:<index> (slow log: one index), read or write"
    )
    source: str = Field(
        description="histogram: LATENCY HISTOGRAM, every call, each percentile its bucket's "
        "upper bound; slowlog: stored slow-log entries, only calls over the threshold"
    )
    index: str | None = Field(
        description="the index the figures are of: a slow-log search bucket's, or for the "
        "histogram the server's only index; null for read, write or several indexes"
    )
    count: int = Field(description="calls (histogram) or entries (slow log) counted")
    p50Us: int
    p95Us: int
    p99Us: int
    unhealthy: bool | None = Field(
        description="p50 over SEARCH_UNHEALTHY_P50_US; null where the source cannot tell "
        "(a slow-log bucket where the histogram answers, read and write)"
    )
    backfilling: bool = Field(
        description="the index was below 100 % indexed: a rise now may be the backfill's"
    )


class SlaStatusRead(BaseModel):
    """One index's search SLA as last judged."""

    index: str
    thresholdUs: int = Field(description="searchSlaByIndex's value for it, or searchSlaP99Us")
    p99Us: int | None = Field(description="the judged p99; null when no call was counted")
    source: str = Field(description="histogram (the server's only index) or slowlog")
    breached: bool
    since: int | None = Field(description="epoch ms the current breach began")
    backfilling: bool


class SearchLatencyRead(BaseModel):
    """Search latency of the selected connection, from its last vector index pass."""

    capturedAt: int | None = Field(description="epoch ms of that pass; null before the first")
    windowMs: int = Field(description="SEARCH_LATENCY_WINDOW_MS: what the figures cover")
    histogramAvailable: bool = Field(
        description="whether LATENCY HISTOGRAM answered (Redis 7+ and Valkey, not refused)"
    )
    histogramCoversMs: int | None = Field(
        description="time between the histogram readings compared: 0 at the first, which "
        "is a baseline (the calls it counts are in no window); null without a histogram"
    )
    slowLog: str = Field(description="commandlog (Valkey 8.1+) or slowlog: the same entries")
    slowLogThresholdUs: int | None = Field(
        description="slowlog-log-slower-than: the slow-log figures see only calls over it"
    )
    slowEntries: int = Field(description="stored slow-log entries within the window")
    advisory: str = Field(description="what the slow-log figures describe")
    buckets: list[LatencyBucketRead]
    slas: list[SlaStatusRead] | None = Field(
        description="each index's SLA; null where the licence has no searchSla (Pro)"
    )


class LatencyPointRead(BaseModel):
    """One time bucket of a latency trend."""

    capturedAt: int = Field(description="epoch ms the time bucket starts")
    count: int
    p50Us: int
    p95Us: int
    p99Us: int


class SearchLatencyTrendRead(BaseModel):
    """One latency bucket over time, from the stored slow log."""

    bucket: str
    source: str = Field(description="slowlog: only calls over the slow-log threshold")
    bucketMs: int
    startTime: int = Field(description="epoch ms, the window's start (`from`)")
    endTime: int = Field(description="epoch ms, the window's end (`to`)")
    advisory: str
    points: list[LatencyPointRead] = Field(
        description="time buckets holding entries, oldest first; a bucket without is left out"
    )
