"""Bodies of the vector search routes (docs/features/vector-search.md)."""

from pydantic import BaseModel, Field


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
