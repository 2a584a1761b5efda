"""Vector index polls kept and served: the latest FT.INFO of every index of each
connection in memory (the routes' live view and the Prometheus families), and every poll's
snapshot in history."""

import contextlib
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from svc_monitor.connections.models import CommandUnavailable, Connection
from svc_monitor.connections.service import ConnectionService
from svc_monitor.engine.capabilities import is_refusal
from svc_monitor.engine.client import EngineClient
from svc_monitor.engine.errors import EngineError
from svc_monitor.engine.latency import CommandHistogram
from svc_monitor.engine.search_index import SearchIndexInfo, VectorField, parse_ft_info
from svc_monitor.errors import NotFound, Unavailable, Unprocessable
from svc_monitor.event_types.vector import (
    VectorBackfillStalled,
    VectorIndexingFailed,
    VectorSlaBreached,
    VectorSlaRecovered,
)
from svc_monitor.events import EventBus
from svc_monitor.runtime_settings.schemas import RuntimeSettingsValues
from svc_monitor.runtime_settings.service import RuntimeSettingsService
from svc_monitor.vector_search import knn
from svc_monitor.vector_search.latency import (
    bucket_of,
    histogram_window,
    index_of,
    nearest_rank,
    slow_buckets,
)
from svc_monitor.vector_search.models import (
    READ_COMMANDS,
    SEARCH_COMMANDS,
    WRITE_COMMANDS,
    LatencyBucket,
    LatencyReading,
    SearchLatency,
    SlaStatus,
    Source,
    TimedEntries,
)
from svc_monitor.vector_search.schemas import (
    KnnSearchRead,
    KnnSearchRequest,
    LatencyBucketRead,
    LatencyPointRead,
    ProfileRead,
    ProfileRequest,
    SearchLatencyRead,
    SearchLatencyTrendRead,
    SearchModuleRead,
    SlaStatusRead,
    TextQueryRead,
    TextQueryRequest,
    VectorFieldRead,
    VectorIndexesRead,
    VectorIndexRead,
    VectorIndexSnapshotRead,
)
from svc_monitor.vector_search.sla import SlaState, judge
from svc_monitor.vector_search.store import VectorIndexStore

ADVISORY = (
    "The slow-log figures count only the calls slower than the slow-log threshold: they "
    "describe the slow tail, not the workload. The histogram figures count every call, "
    "each percentile given as the upper bound of the server's bucket it falls in."
)


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
        bus: EventBus,
        *,
        backfill_alert_ms: int,
        latency_window_ms: int = 900_000,
        unhealthy_p50_us: int = 10_000,
        sla_debounce_ms: int = 600_000,
        sla_allowed: Callable[[], bool] = lambda: True,
        slow_entries: TimedEntries | None = None,
    ) -> None:
        self._store = store
        self._connections = connections
        self._runtime_settings = runtime_settings
        self._bus = bus
        self._backfill_alert_ms = backfill_alert_ms
        # connection id -> its newest poll in this process (what the scrape reads).
        self.latest: dict[str, IndexPoll] = {}
        # (connection id, index) -> when a poll first saw it below 100 % indexed, and
        # those whose vector_index.backfill_stalled has fired since.
        self._below_since: dict[tuple[str, str], int] = {}
        self._stalled: set[tuple[str, str]] = set()
        self.latency_window_ms = latency_window_ms
        self._unhealthy_p50_us = unhealthy_p50_us
        self._sla_debounce_ms = sla_debounce_ms
        self._sla_allowed = sla_allowed
        self._slow_entries = slow_entries
        # connection id -> its histogram readings within the window (and the newest one
        # before it, the window's baseline), oldest first.
        self._histograms: dict[str, list[tuple[int, dict[str, CommandHistogram]]]] = {}
        # connection id -> its newest search latency figures (routes and the scrape).
        self.search_latency: dict[str, SearchLatency] = {}
        self._slas: dict[tuple[str, str], SlaState] = {}

    def record(self, connection_id: str, poll: IndexPoll) -> None:
        previous = self.latest.get(connection_id)
        self.latest[connection_id] = poll
        self._judge(connection_id, previous, poll)
        self._store.add(
            [
                {
                    "connection_id": connection_id,
                    "captured_at": poll.captured_at,
                    "index_name": index.name[:256],
                    "node": index.node,
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
        self._histograms.pop(connection_id, None)
        self.search_latency.pop(connection_id, None)
        for key in [k for k in self._slas if k[0] == connection_id]:
            del self._slas[key]
        for key in [k for k in self._below_since if k[0] == connection_id]:
            del self._below_since[key]
        self._stalled = {k for k in self._stalled if k[0] != connection_id}

    def _judge(self, connection_id: str, previous: IndexPoll | None, poll: IndexPoll) -> None:
        """The two vector index events, each once per finding (event_types/vector.py)."""
        before = {} if previous is None else {_ident(i): i for i in previous.indexes}
        for index in poll.indexes:
            key = (connection_id, _ident(index))
            failures = index.indexing_failures
            if previous is not None and failures:
                # An index first seen after the connection's first poll was created while
                # watched: its failures are all new.
                earlier = before.get(_ident(index))
                known = 0 if earlier is None else earlier.indexing_failures or 0
                if failures > known:
                    self._bus.publish(
                        VectorIndexingFailed(
                            connection_id=connection_id,
                            at_ms=poll.captured_at,
                            index_name=index.name,
                            new_failures=failures - known,
                            total_failures=failures,
                            last_error=index.last_error,
                        )
                    )
            progress = index.percent_indexed
            if progress is None or progress >= 100:
                self._below_since.pop(key, None)
                self._stalled.discard(key)
                continue
            since = self._below_since.setdefault(key, poll.captured_at)
            below_for = poll.captured_at - since
            if below_for >= self._backfill_alert_ms and key not in self._stalled:
                self._stalled.add(key)
                self._bus.publish(
                    VectorBackfillStalled(
                        connection_id=connection_id,
                        at_ms=poll.captured_at,
                        index_name=index.name,
                        percent_indexed=progress,
                        below_for_ms=below_for,
                        alert_after_ms=self._backfill_alert_ms,
                    )
                )
        names = {_ident(i) for i in poll.indexes}
        for key in [k for k in self._below_since if k[0] == connection_id and k[1] not in names]:
            del self._below_since[key]  # dropped: a new index of that name starts afresh
            self._stalled.discard(key)

    def record_latency(
        self, connection_id: str, reading: LatencyReading, values: RuntimeSettingsValues
    ) -> SearchLatency:
        """Work out one pass's search latency figures, keep them, and judge each index's
        SLA (Pro): docs/features/vector-search.md#search-latency."""
        poll = self.latest.get(connection_id)
        # By name: the slow log and the SLA settings name indexes, not the nodes holding
        # them (a cluster's shards may each hold one of the same name: the first is judged).
        indexes: dict[str, SearchIndexInfo] = {}
        for index in () if poll is None else poll.indexes:
            indexes.setdefault(index.name, index)

        def backfilling(name: str | None) -> bool:
            return name is not None and name in indexes and _backfilling(indexes[name])

        only = next(iter(indexes)) if len(indexes) == 1 else None
        buckets: list[LatencyBucket] = []
        covers: int | None = None
        if reading.histograms is not None:
            oldest, newest, covers = self._histogram_pair(connection_id, reading)
            for command in SEARCH_COMMANDS:
                after = newest.get(command)
                figures = None if after is None else histogram_window(oldest.get(command), after)
                if figures is None:
                    continue
                buckets.append(
                    LatencyBucket(
                        bucket=command,
                        source="histogram",
                        index=only,
                        figures=figures,
                        unhealthy=figures.p50_us > self._unhealthy_p50_us,
                        backfilling=backfilling(only),
                    )
                )
        no_histogram = reading.histograms is None
        for name, figures in slow_buckets(reading.slow_entries).items():
            index_name = index_of(name)
            buckets.append(
                LatencyBucket(
                    bucket=name,
                    source="slowlog",
                    index=index_name,
                    figures=figures,
                    # The slow tail's p50 says nothing of every call's where the histogram
                    # answers; without one it is all there is, an upper bound.
                    unhealthy=figures.p50_us > self._unhealthy_p50_us
                    if index_name is not None and no_histogram
                    else None,
                    backfilling=backfilling(index_name),
                )
            )
        slas = (
            self._judge_slas(connection_id, reading.captured_at, indexes, buckets, values)
            if self._sla_allowed()
            else None
        )
        latency = SearchLatency(
            captured_at=reading.captured_at,
            window_ms=self.latency_window_ms,
            histogram_covers_ms=covers,
            histogram_available=reading.histograms is not None,
            slow_log_name=reading.slow_log_name,
            slow_log_threshold_us=reading.slow_log_threshold_us,
            slow_entries=len(reading.slow_entries),
            buckets=tuple(buckets),
            slas=slas,
        )
        self.search_latency[connection_id] = latency
        return latency

    def _histogram_pair(
        self, connection_id: str, reading: LatencyReading
    ) -> tuple[dict[str, CommandHistogram], dict[str, CommandHistogram], int | None]:
        """(the window's baseline reading, the newest, the time between): the readings
        kept are those within the window and the newest before it."""
        assert reading.histograms is not None
        kept = self._histograms.setdefault(connection_id, [])
        kept.append((reading.captured_at, reading.histograms))
        start = reading.captured_at - self.latency_window_ms
        while len(kept) > 1 and kept[1][0] <= start:
            del kept[0]
        # The first reading is only a baseline: when the calls it counts were made is not
        # known, so they are in no window.
        return kept[0][1], reading.histograms, reading.captured_at - kept[0][0]

    def _judge_slas(
        self,
        connection_id: str,
        now: int,
        indexes: dict[str, SearchIndexInfo],
        buckets: list[LatencyBucket],
        values: RuntimeSettingsValues,
    ) -> tuple[SlaStatus, ...]:
        """Each index's p99 against its threshold: the histogram's FT.SEARCH figures where
        the index is the server's only one (every call), else its slow-log bucket."""
        histogram = next(
            (b for b in buckets if b.source == "histogram" and b.bucket == "FT.SEARCH"), None
        )
        slow = {
            b.index: b
            for b in buckets
            if b.source == "slowlog" and b.bucket.startswith("FT.SEARCH:")
        }
        statuses: list[SlaStatus] = []
        for name, index in indexes.items():
            threshold = values.searchSlaByIndex.get(name, values.searchSlaP99Us)
            key = (connection_id, name)
            if threshold <= 0:
                self._slas.pop(key, None)
                continue
            source: Source
            if histogram is not None and histogram.index == name:
                source, p99 = "histogram", histogram.figures.p99_us
            elif len(indexes) == 1 and histogram is None and self._histograms.get(connection_id):
                source, p99 = "histogram", None  # read, and no search in the window
            else:
                bucket = slow.get(name)
                source, p99 = "slowlog", None if bucket is None else bucket.figures.p99_us
            state = self._slas.setdefault(key, SlaState())
            since = state.since_ms
            verdict = judge(state, p99, threshold, now_ms=now, debounce_ms=self._sla_debounce_ms)
            filling = _backfilling(index)
            if verdict == "breached" and p99 is not None:
                self._bus.publish(
                    VectorSlaBreached(
                        connection_id=connection_id,
                        at_ms=now,
                        index_name=name,
                        p99_us=p99,
                        threshold_us=threshold,
                        source=source,
                        window_ms=self.latency_window_ms,
                        while_backfilling=filling,
                    )
                )
            elif verdict == "recovered":
                self._bus.publish(
                    VectorSlaRecovered(
                        connection_id=connection_id,
                        at_ms=now,
                        index_name=name,
                        p99_us=p99,
                        threshold_us=threshold,
                        breached_for_ms=now - (since if since is not None else now),
                    )
                )
            statuses.append(
                SlaStatus(
                    index=name,
                    threshold_us=threshold,
                    p99_us=p99,
                    source=source,
                    breached=state.breached,
                    since=state.since_ms,
                    backfilling=filling,
                )
            )
        for key in [k for k in self._slas if k[0] == connection_id and k[1] not in indexes]:
            del self._slas[key]  # dropped: a new index of that name starts afresh
        return tuple(statuses)

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

    async def latency(self, connection: Connection) -> SearchLatencyRead:
        """The last pass's search latency figures (none before the first)."""
        await self._connections.require_live_feature(connection, "vector_search")
        latency = self.search_latency.get(connection.id)
        if latency is None:
            return SearchLatencyRead(
                capturedAt=None,
                windowMs=self.latency_window_ms,
                histogramAvailable=False,
                histogramCoversMs=None,
                slowLog="slowlog",
                slowLogThresholdUs=None,
                slowEntries=0,
                advisory=ADVISORY,
                buckets=[],
                slas=None if not self._sla_allowed() else [],
            )
        return SearchLatencyRead(
            capturedAt=latency.captured_at,
            windowMs=latency.window_ms,
            histogramAvailable=latency.histogram_available,
            histogramCoversMs=latency.histogram_covers_ms,
            slowLog=latency.slow_log_name,
            slowLogThresholdUs=latency.slow_log_threshold_us,
            slowEntries=latency.slow_entries,
            advisory=ADVISORY,
            buckets=[
                LatencyBucketRead(
                    bucket=b.bucket,
                    source=b.source,
                    index=b.index,
                    count=b.figures.count,
                    p50Us=b.figures.p50_us,
                    p95Us=b.figures.p95_us,
                    p99Us=b.figures.p99_us,
                    unhealthy=b.unhealthy,
                    backfilling=b.backfilling,
                )
                for b in latency.buckets
            ],
            slas=None
            if latency.slas is None
            else [
                SlaStatusRead(
                    index=s.index,
                    thresholdUs=s.threshold_us,
                    p99Us=s.p99_us,
                    source=s.source,
                    breached=s.breached,
                    since=s.since,
                    backfilling=s.backfilling,
                )
                for s in latency.slas
            ],
        )

    async def trend(
        self,
        connection: Connection,
        bucket: str,
        *,
        since: int | None,
        until: int | None,
        bucket_ms: int,
    ) -> SearchLatencyTrendRead:
        """One slow-log bucket's p50/p95/p99 per `bucket_ms` over a window (the last hour
        by default), from the stored entries."""
        await self._connections.require_live_feature(connection, "vector_search")
        commands = _bucket_commands(bucket)
        end = until if until is not None else int(time.time() * 1000)
        start = since if since is not None else end - 3_600_000
        if start > end:
            raise Unprocessable("from: must not be after to", field="from")
        if (end - start) // bucket_ms >= MAX_TREND_POINTS:
            raise Unprocessable(
                f"bucketMs: {bucket_ms} ms over this window makes more than "
                f"{MAX_TREND_POINTS} points; widen it",
                field="bucketMs",
            )
        entries = (
            []
            if self._slow_entries is None
            else await self._slow_entries(connection.id, start, end, commands, MAX_TREND_ENTRIES)
        )
        by_time: dict[int, list[int]] = {}
        for started_at, command, first_arg, duration in entries:
            if bucket_of(command, first_arg) == bucket:
                slot = start + (started_at - start) // bucket_ms * bucket_ms
                by_time.setdefault(slot, []).append(duration)
        points = []
        for at, durations in sorted(by_time.items()):
            figures = nearest_rank(durations)
            if figures is not None:
                points.append(
                    LatencyPointRead(
                        capturedAt=at,
                        count=figures.count,
                        p50Us=figures.p50_us,
                        p95Us=figures.p95_us,
                        p99Us=figures.p99_us,
                    )
                )
        return SearchLatencyTrendRead(
            bucket=bucket,
            source="slowlog",
            bucketMs=bucket_ms,
            startTime=start,
            endTime=end,
            advisory=ADVISORY,
            points=points,
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

    async def knn(
        self, connection: Connection, index_name: str, request: KnnSearchRequest
    ) -> KnnSearchRead:
        """The `k` documents nearest to the request's vector (or its source key's), read
        live with one FT.INFO (the field's type and dimensions) and one FT.SEARCH."""
        await self._connections.require_live_feature(connection, "vector_search")
        async with self._client_for(connection, index_name) as client:
            return await self._knn(client, index_name, request)

    async def _knn(
        self, client: EngineClient, index_name: str, request: KnnSearchRequest
    ) -> KnnSearchRead:
        info = parse_ft_info(index_name, await self._ask(client, ["FT.INFO", index_name]))
        if not info.vector_fields:
            raise Unprocessable(f"index '{index_name}' has no vector field", field="field")
        field = next(
            (f for f in info.vector_fields if request.field in (None, f.name)),
            None,
        )
        if field is None:
            names = ", ".join(f.name for f in info.vector_fields)
            raise Unprocessable(
                f"index '{index_name}' has no vector field '{request.field}' (it has {names})",
                field="field",
            )
        blob = await self._query_vector(client, field, request)
        started = time.perf_counter()
        reply = await self._ask(
            client, knn.command(index_name, field.name, blob, k=request.k, filter=request.filter)
        )
        took = (time.perf_counter() - started) * 1000
        skip = {f.name for f in info.vector_fields}
        return KnnSearchRead(
            index=index_name,
            field=field.name,
            k=request.k,
            tookMs=round(took, 3),
            hits=knn.hits(reply, skip),
        )

    async def text_query(
        self, connection: Connection, index_name: str, request: TextQueryRequest
    ) -> TextQueryRead:
        """The documents a query matches, read live (FT.INFO for the vector fields to
        leave out, then FT.SEARCH)."""
        await self._connections.require_live_feature(connection, "vector_search")
        async with self._client_for(connection, index_name) as client:
            return await self._text_query(client, index_name, request)

    async def _text_query(
        self, client: EngineClient, index_name: str, request: TextQueryRequest
    ) -> TextQueryRead:
        info = parse_ft_info(index_name, await self._ask(client, ["FT.INFO", index_name]))
        command = knn.text_command(
            index_name, request.query, limit=request.limit, offset=request.offset
        )
        started = time.perf_counter()
        reply = await self._ask(client, command)
        took = (time.perf_counter() - started) * 1000
        return TextQueryRead(
            index=index_name,
            total=knn.total(reply),
            tookMs=round(took, 3),
            hits=knn.hits(reply, {f.name for f in info.vector_fields}),
        )

    async def profile(
        self, connection: Connection, index_name: str, request: ProfileRequest
    ) -> ProfileRead:
        """FT.PROFILE of a query: 501 where the engine has none (Valkey Search)."""
        await self._connections.require_live_feature(connection, "vector_search")
        command = knn.profile_command(index_name, request.query, limit=request.limit)
        async with self._client_for(connection, index_name) as client:
            reply = await self._ask(client, command)
        results, profile = (
            (reply[0], reply[1]) if isinstance(reply, list) and len(reply) == 2 else (reply, None)
        )
        return ProfileRead(
            index=index_name, total=knn.total(results), profile=knn.readable(profile)
        )

    @contextlib.asynccontextmanager
    async def _client_for(
        self, connection: Connection, index_name: str
    ) -> AsyncIterator[EngineClient]:
        """The connection's client, or for an index the last poll found on another node of
        a cluster, a client of that node's own (the index's name is its key: the seed would
        answer MOVED), closed after the call."""
        seed = self._connections.client(connection)
        poll = self.latest.get(connection.id)
        node = next(
            (i.node for i in (poll.indexes if poll else ()) if i.name == index_name and i.node),
            None,
        )
        host, _, port = (node or "").rpartition(":")
        if node is None or (host.strip("[]"), int(port)) == (connection.host, connection.port):
            yield seed
            return
        client = self._connections.node_client(seed.target.peer(host.strip("[]"), int(port)))
        try:
            yield client
        finally:
            await client.close()

    async def _query_vector(
        self, client: EngineClient, field: VectorField, request: KnnSearchRequest
    ) -> bytes:
        size = knn.item_size(field.data_type)
        if request.vector is not None:
            if field.dimensions is not None and len(request.vector) != field.dimensions:
                raise Unprocessable(
                    f"the vector has {len(request.vector)} values; {field.name} has "
                    f"{field.dimensions} dimensions",
                    field="vector",
                )
            try:
                return knn.pack(request.vector, field.data_type)
            except knn.CannotPack as exc:
                raise Unprocessable(str(exc), field="vector") from None
        assert request.sourceKey is not None  # the request's validator: one of the two
        blob = await self._ask(client, ["HGET", request.sourceKey, field.name])
        if blob is None:
            raise NotFound(
                f"no hash '{request.sourceKey}' with a field '{field.name}' to search by"
            )
        if not isinstance(blob, bytes):
            raise Unprocessable("the source key's vector is not a binary value", field="sourceKey")
        if (
            size is not None
            and field.dimensions is not None
            and len(blob) != size * field.dimensions
        ):
            raise Unprocessable(
                f"'{request.sourceKey}' holds {len(blob)} bytes in {field.name}; the field "
                f"takes {size * field.dimensions}",
                field="sourceKey",
            )
        return blob

    async def _ask(self, client: EngineClient, command: list[Any]) -> Any:
        """One live command; the engine's refusals as the API's answers."""
        try:
            return await client.execute(*command)
        except EngineError as exc:
            message = exc.message
            lowered = message.lower()
            if "unknown index name" in lowered or "no such index" in lowered:
                raise NotFound(f"no search index '{command[1]}' on this server") from None
            if "wrongtype" in lowered:
                raise Unprocessable(
                    f"'{command[1]}' is not a hash: {message}", field="sourceKey"
                ) from None
            if command[0] in ("FT.SEARCH", "FT.PROFILE") and "syntax" in lowered:
                # A KNN search's own query is ours: only its filter can be at fault.
                field = "filter" if "=>[KNN" in str(command[2]) else "query"
                raise Unprocessable(f"the {field} is not a query: {message}", field=field) from None
            if command[0] == "FT.PROFILE" and is_refusal(exc):
                raise CommandUnavailable(
                    "FT.PROFILE is not available on this server: its search engine does not "
                    f"profile queries, or this user may not run it ({message})"
                ) from None
            if is_refusal(exc):
                raise CommandUnavailable(f"{command[0]} was refused: {message}") from None
            raise Unavailable(f"{command[0]} failed: {message}") from None


# A trend's bounds: points a chart can draw, entries one read takes.
MAX_TREND_POINTS = 1440
MAX_TREND_ENTRIES = 100_000


def _bucket_commands(bucket: str) -> frozenset[str]:
    """What the stored slow log is asked for, for one bucket; 422 for an unknown bucket."""
    if bucket == "read":
        return READ_COMMANDS
    if bucket == "write":
        return WRITE_COMMANDS
    command, colon, index = bucket.partition(":")
    if colon and index and command in SEARCH_COMMANDS:
        return frozenset({command})
    raise Unprocessable(
        "bucket: FT.SEARCH:<index>, FT.AGGREGATE:<index>, read or write", field="bucket"
    )


def _backfilling(index: SearchIndexInfo) -> bool:
    """Below 100 % indexed, or still indexing: a latency rise now may be the backfill's."""
    progress = index.percent_indexed
    return bool(index.indexing) or (progress is not None and progress < 100)


def _ident(index: SearchIndexInfo) -> str:
    """An index's key in the events' memory: its name, and for a cluster its node too."""
    return index.name if index.node is None else f"{index.name}@{index.node}"


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
        node=index.node,
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
        node=row["node"],
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
