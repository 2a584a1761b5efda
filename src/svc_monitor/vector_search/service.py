"""Vector index polls kept and served: the latest FT.INFO of every index of each
connection in memory (the routes' live view and the Prometheus families), and every poll's
snapshot in history."""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from svc_monitor.connections.models import Connection
from svc_monitor.connections.service import ConnectionService
from svc_monitor.engine.search_index import SearchIndexInfo, VectorField
from svc_monitor.runtime_settings.service import RuntimeSettingsService
from svc_monitor.vector_search.schemas import (
    SearchModuleRead,
    VectorFieldRead,
    VectorIndexesRead,
    VectorIndexRead,
    VectorIndexSnapshotRead,
)
from svc_monitor.vector_search.store import VectorIndexStore


@dataclass(frozen=True, slots=True)
class SearchModule:
    name: str
    version: str | None


@dataclass(frozen=True, slots=True)
class IndexPoll:
    """What one vector index poll of one connection read."""

    captured_at: int
    module: SearchModule | None
    indexes: tuple[SearchIndexInfo, ...]


class VectorSearchService:
    """Records vector index polls and answers the vector search routes."""

    def __init__(
        self,
        store: VectorIndexStore,
        connections: ConnectionService,
        runtime_settings: RuntimeSettingsService,
    ) -> None:
        self._store = store
        self._connections = connections
        self._runtime_settings = runtime_settings
        # connection id -> its newest poll in this process (what the scrape reads).
        self.latest: dict[str, IndexPoll] = {}

    def record(self, connection_id: str, poll: IndexPoll) -> None:
        self.latest[connection_id] = poll
        self._store.add(
            [
                {
                    "connection_id": connection_id,
                    "captured_at": poll.captured_at,
                    "index_name": index.name[:256],
                    "docs": index.docs,
                    "records": index.records,
                    "indexing_failures": index.indexing_failures,
                    "percent_indexed": index.percent_indexed,
                    "indexing": index.indexing,
                    "memory_bytes": index.memory_bytes,
                    "vector_memory_bytes": index.vector_memory_bytes,
                    "vector_fields": [_field_json(f) for f in index.vector_fields],
                    "last_error": index.last_error,
                }
                for index in poll.indexes
            ]
        )

    def forget(self, connection_id: str) -> None:
        self.latest.pop(connection_id, None)

    async def indexes(self, connection: Connection) -> VectorIndexesRead:
        """The last poll's view; CommandUnavailable (501) where no search engine answers."""
        await self._connections.require_live_feature(connection, "vector_search")
        poll = self.latest.get(connection.id)
        interval = (await self._runtime_settings.current()).vectorIndexPollIntervalMs
        if poll is None:
            return VectorIndexesRead(
                module=None, capturedAt=None, pollIntervalMs=interval, indexes=[]
            )
        module = poll.module
        return VectorIndexesRead(
            module=None
            if module is None
            else SearchModuleRead(name=module.name, version=module.version),
            capturedAt=poll.captured_at,
            pollIntervalMs=interval,
            indexes=[_read(i) for i in poll.indexes],
        )

    async def history(
        self,
        connection: Connection,
        index_name: str | None,
        *,
        since: int | None,
        until: int | None,
        limit: int,
        offset: int,
    ) -> list[VectorIndexSnapshotRead]:
        """Stored snapshots, oldest first; one index when `index_name` is given."""
        await self._connections.require_live_feature(connection, "vector_search")
        rows = await self._store.history(
            connection.id, index_name, since=since, until=until, limit=limit, offset=offset
        )
        return [_snapshot(r._mapping) for r in rows]


def _field_json(field: VectorField) -> dict[str, Any]:
    return {
        "name": field.name,
        "algorithm": field.algorithm,
        "dataType": field.data_type,
        "dimensions": field.dimensions,
        "distanceMetric": field.distance_metric,
    }


def _read(index: SearchIndexInfo) -> VectorIndexRead:
    return VectorIndexRead(
        name=index.name,
        docs=index.docs,
        records=index.records,
        indexingFailures=index.indexing_failures,
        percentIndexed=index.percent_indexed,
        indexing=index.indexing,
        memoryBytes=index.memory_bytes,
        vectorMemoryBytes=index.vector_memory_bytes,
        vectorFields=[VectorFieldRead(**_field_json(f)) for f in index.vector_fields],
        lastError=index.last_error,
    )


def _snapshot(row: Any) -> VectorIndexSnapshotRead:
    fields: Sequence[dict[str, Any]] = row["vector_fields"] or []
    return VectorIndexSnapshotRead(
        id=row["id"],
        capturedAt=row["captured_at"],
        name=row["index_name"],
        docs=row["docs"],
        records=row["records"],
        indexingFailures=row["indexing_failures"],
        percentIndexed=row["percent_indexed"],
        indexing=row["indexing"],
        memoryBytes=row["memory_bytes"],
        vectorMemoryBytes=row["vector_memory_bytes"],
        vectorFields=[VectorFieldRead(**f) for f in fields],
        lastError=row["last_error"],
    )
