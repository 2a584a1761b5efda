"""Trace ingest, listing and span trees, on every storage backend."""

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from sqlalchemy import func, select

from svc_monitor.storage.database import Database
from svc_monitor.storage.retention import DAY_MS, HistoryRetention
from svc_monitor.traces.service import InvalidTraceId, TraceNotFound, TraceService
from svc_monitor.traces.store import HISTORY_TABLES, TraceStore, trace_spans
from tests.fixtures.app import make_settings
from tests.traces.builders import MS, SpanSpec, export_request, new_span_id, new_trace_id

NOW_NS = time.time_ns()
NOW_MS = NOW_NS // MS


@pytest.fixture
async def db(storage: dict[str, Any]) -> AsyncIterator[Database]:
    database = Database.from_settings(make_settings(**storage))
    await database.migrate()
    yield database
    await database.close()


@pytest.fixture
def traces(db: Database) -> TraceService:
    return TraceService(TraceStore(db), make_settings())


async def stored_count(db: Database) -> int:
    row = await db.fetch_one(select(func.count()).select_from(trace_spans))
    assert row is not None
    return int(row[0])


def a_trace(
    *, service: str = "checkout", at_ms: float = 0.0, status: int = 0, duration_ms: float = 10.0
) -> list[SpanSpec]:
    """A root and one `@svc/` child."""
    trace_id = new_trace_id()
    root = SpanSpec(
        "POST /checkout",
        trace_id,
        scope="opentelemetry.instrumentation.fastapi",
        service=service,
        start_ms=at_ms,
        duration_ms=duration_ms,
    )
    child = SpanSpec(
        "cache.get",
        trace_id,
        parent=root.span_id,
        service=service,
        start_ms=at_ms + 1,
        duration_ms=duration_ms / 2,
        status=status,
    )
    return [root, child]


class TestIngest:
    async def test_svc_scopes_and_roots_are_kept_the_rest_counted(
        self, traces: TraceService, db: Database
    ):
        trace_id = new_trace_id()
        root = SpanSpec("GET /", trace_id, scope="opentelemetry.instrumentation.flask")
        ours = SpanSpec("llm.call", trace_id, parent=root.span_id, scope="@svc/agent")
        foreign = [
            SpanSpec(f"SELECT {i}", trace_id, parent=root.span_id, scope="sqlalchemy")
            for i in range(3)
        ]
        response = await traces.ingest(export_request(root, ours, *foreign))

        assert response.partial_success.rejected_spans == 3
        assert response.partial_success.error_message == "not_svc_scope=3"
        assert await stored_count(db) == 2
        assert (traces.spans_stored, traces.spans_dropped) == (2, 3)
        assert traces.spans_dropped_by_reason == {"not_svc_scope": 3, "invalid_id": 0}

    async def test_full_success_leaves_partial_success_unset(self, traces: TraceService):
        response = await traces.ingest(export_request(*a_trace()))
        assert not response.HasField("partial_success")

    async def test_an_all_zero_parent_is_a_root(self, traces: TraceService, db: Database):
        span = SpanSpec("job", new_trace_id(), parent=bytes(8), scope="celery")
        response = await traces.ingest(export_request(span))
        assert not response.HasField("partial_success")
        trace = await traces.get_trace(span.trace_id.hex())
        assert trace.spans[0].parentSpanId is None

    async def test_invalid_ids_are_dropped_and_counted(self, traces: TraceService, db: Database):
        good = new_trace_id()
        bad = [
            SpanSpec("short trace id", b"\x01" * 8),
            SpanSpec("zero trace id", bytes(16)),
            SpanSpec("zero span id", good, span_id=bytes(8)),
            SpanSpec("odd parent id", good, parent=b"\x01\x02\x03"),
        ]
        response = await traces.ingest(export_request(SpanSpec("fine", good), *bad))
        assert response.partial_success.rejected_spans == 4
        assert response.partial_success.error_message == "invalid_id=4"
        assert await stored_count(db) == 1

    async def test_both_reasons_are_listed(self, traces: TraceService):
        trace_id = new_trace_id()
        spans = [
            SpanSpec("foreign child", trace_id, parent=new_span_id(), scope="redis"),
            SpanSpec("zero span id", trace_id, span_id=bytes(8)),
        ]
        response = await traces.ingest(export_request(*spans))
        assert response.partial_success.error_message == "not_svc_scope=1 invalid_id=1"

    async def test_the_same_span_twice_is_one_row_and_the_later_copy_wins(
        self, traces: TraceService, db: Database
    ):
        first = SpanSpec("draft", new_trace_id(), span_id=b"\x07" * 8)
        await traces.ingest(export_request(first))
        first.name = "final"
        await traces.ingest(export_request(first))
        assert await stored_count(db) == 1
        trace = await traces.get_trace(first.trace_id.hex())
        assert [s.name for s in trace.spans] == ["final"]

    async def test_a_span_repeated_in_one_request_is_one_row(
        self, traces: TraceService, db: Database
    ):
        span = SpanSpec("twice", new_trace_id())
        await traces.ingest(export_request(span, span))
        assert await stored_count(db) == 1

    async def test_every_field_comes_back(self, traces: TraceService):
        trace_id = new_trace_id()
        root = SpanSpec("GET /answer", trace_id, kind=2, duration_ms=40.0, service="agent-api")
        attributes: dict[str, Any] = {
            "text": 'héllo "quoted" \\ \n',
            "count": 42,
            "ratio": 0.25,
            "flag": True,
            "tags": ["a", "b"],
            "nested": {"inner": 1},
            "raw": b"\x00\xff",
        }
        child = SpanSpec(
            "llm.generate",
            trace_id,
            parent=root.span_id,
            scope="@svc/llm",
            service="agent-api",
            kind=3,
            start_ms=5.0,
            duration_ms=20.0,
            status=2,
            status_message="rate limited",
            attributes=attributes,
            events=[("retry", 12.0, {"attempt": 2})],
        )
        await traces.ingest(export_request(root, child, start_ns=NOW_NS))
        trace = await traces.get_trace(trace_id.hex().upper())  # ids are case-blind

        assert trace.traceId == trace_id.hex()
        assert (trace.rootName, trace.serviceName, trace.spanCount) == (
            "GET /answer",
            "agent-api",
            2,
        )
        assert trace.hasError
        assert trace.durationMs == 40.0
        assert trace.startTimeMs == NOW_MS
        got = trace.spans[1]
        assert (got.name, got.kind, got.scopeName, got.depth) == (
            "llm.generate",
            "client",
            "@svc/llm",
            1,
        )
        assert got.parentSpanId == root.span_id.hex()
        assert (got.statusCode, got.statusMessage) == ("error", "rate limited")
        assert (got.offsetMs, got.durationMs) == (5.0, 20.0)
        assert got.startTimeUnixNano == str(NOW_NS + 5 * MS)
        assert got.attributes == {**attributes, "raw": "AP8="}  # bytes as base64
        assert [(e.name, e.offsetMs, e.attributes) for e in got.events] == [
            ("retry", 12.0, {"attempt": 2})
        ]
        assert got.resourceAttributes == {
            "telemetry.sdk.language": "python",
            "service.name": "agent-api",
        }
        assert trace.spans[0].kind == "server"

    async def test_non_finite_doubles_are_kept_as_text(self, traces: TraceService):
        span = SpanSpec(
            "odd", new_trace_id(), attributes={"nan": float("nan"), "inf": float("inf")}
        )
        await traces.ingest(export_request(span))
        trace = await traces.get_trace(span.trace_id.hex())
        assert trace.spans[0].attributes == {"nan": "NaN", "inf": "Infinity"}

    async def test_concurrent_exports_are_all_stored(self, traces: TraceService, db: Database):
        requests = [export_request(*a_trace()) for _ in range(20)]
        responses = await asyncio.gather(*(traces.ingest(r) for r in requests))
        assert all(not r.HasField("partial_success") for r in responses)
        assert await stored_count(db) == 40
        assert traces.spans_stored == 40

    async def test_a_large_export_is_stored_whole(self, traces: TraceService, db: Database):
        trace_id = new_trace_id()
        spans = [SpanSpec(f"step {i}", trace_id, start_ms=i) for i in range(5_321)]
        await traces.ingest(export_request(*spans))
        await traces.flush()
        assert await stored_count(db) == 5_321


class TestListTraces:
    async def test_summaries_newest_first(self, traces: TraceService):
        older, newer = a_trace(at_ms=-60_000, duration_ms=30), a_trace(at_ms=-1_000)
        await traces.ingest(export_request(*older, *newer, start_ns=NOW_NS))
        listed = (await traces.list_traces()).traces
        assert [t.traceId for t in listed] == [newer[0].trace_id.hex(), older[0].trace_id.hex()]
        summary = listed[1]
        assert (summary.rootName, summary.serviceName, summary.spanCount) == (
            "POST /checkout",
            "checkout",
            2,
        )
        assert summary.durationMs == 30.0
        assert summary.startTimeMs == NOW_MS - 60_000
        assert not summary.hasError

    async def test_window(self, traces: TraceService):
        old = a_trace(at_ms=-2 * 3_600_000)
        recent = a_trace(at_ms=-60_000)
        await traces.ingest(export_request(*old, *recent, start_ns=NOW_NS))
        default = (await traces.list_traces()).traces  # the last hour
        assert [t.traceId for t in default] == [recent[0].trace_id.hex()]
        earlier = await traces.list_traces(since=NOW_MS - 3 * 3_600_000, until=NOW_MS - 3_600_000)
        assert [t.traceId for t in earlier.traces] == [old[0].trace_id.hex()]

    async def test_a_trace_counts_from_its_earliest_span(self, traces: TraceService):
        spans = a_trace(at_ms=-10_000, duration_ms=20_000)  # the child starts 1 ms later
        await traces.ingest(export_request(*spans, start_ns=NOW_NS))
        after_start = await traces.list_traces(since=NOW_MS - 5_000)
        assert after_start.traces == []  # it started before the window
        covering = await traces.list_traces(since=NOW_MS - 20_000)
        assert covering.traces[0].spanCount == 2

    async def test_service_status_and_duration_filters(self, traces: TraceService):
        failed = a_trace(service="payments", status=2, duration_ms=500)
        fine = a_trace(service="payments", status=1, duration_ms=5)
        quiet = a_trace(service="search", duration_ms=50)
        await traces.ingest(export_request(*failed, *fine, *quiet))

        async def ids(**filters: Any) -> set[str]:
            return {t.traceId for t in (await traces.list_traces(**filters)).traces}

        failed_id, fine_id, quiet_id = (t[0].trace_id.hex() for t in (failed, fine, quiet))
        assert await ids(service="payments") == {failed_id, fine_id}
        assert await ids(status="error") == {failed_id}
        assert await ids(status="ok") == {fine_id}
        assert await ids(status="unset") == {quiet_id}
        assert await ids(min_duration_ms=50) == {failed_id, quiet_id}
        assert await ids(service="payments", min_duration_ms=50) == {failed_id}
        assert await ids(service="nobody") == set()
        listed = (await traces.list_traces(status="error")).traces
        assert listed[0].hasError

    async def test_limit(self, traces: TraceService):
        for i in range(5):
            await traces.ingest(export_request(*a_trace(at_ms=-i * 1000), start_ns=NOW_NS))
        assert len((await traces.list_traces(limit=3)).traces) == 3

    async def test_without_a_stored_root_the_first_span_names_the_trace(self, traces: TraceService):
        trace_id = new_trace_id()
        orphans = [
            SpanSpec("b.step", trace_id, parent=new_span_id()),
            SpanSpec("a.step", trace_id, parent=new_span_id()),
        ]
        await traces.ingest(export_request(*orphans))
        listed = (await traces.list_traces()).traces
        assert listed[0].rootName == "a.step"

    async def test_services_offered_by_the_filter(self, traces: TraceService):
        await traces.ingest(export_request(*a_trace(service="b"), *a_trace(service="a")))
        assert await traces.services(since=NOW_MS - 60_000) == ["a", "b"]


class TestGetTrace:
    async def test_tree_order_with_depth(self, traces: TraceService):
        t = new_trace_id()
        root = SpanSpec("root", t, duration_ms=100)
        late = SpanSpec("late child", t, parent=root.span_id, start_ms=50)
        early = SpanSpec("early child", t, parent=root.span_id, start_ms=10)
        grandchild = SpanSpec("grandchild", t, parent=early.span_id, start_ms=60)
        orphan = SpanSpec("orphan", t, parent=new_span_id(), start_ms=5)
        await traces.ingest(export_request(late, grandchild, root, orphan, early))

        trace = await traces.get_trace(t.hex())
        assert [(s.name, s.depth) for s in trace.spans] == [
            ("root", 0),
            ("early child", 1),
            ("grandchild", 2),
            ("late child", 1),
            ("orphan", 0),
        ]
        assert trace.rootName == "root"
        assert not trace.truncated

    async def test_unknown_trace_is_not_found(self, traces: TraceService):
        with pytest.raises(TraceNotFound):
            await traces.get_trace("ab" * 16)

    @pytest.mark.parametrize("bad", ["abc", "zz" * 16, "ab" * 17])
    async def test_an_id_that_is_not_32_hex_characters_is_refused(
        self, traces: TraceService, bad: str
    ):
        with pytest.raises(InvalidTraceId):
            await traces.get_trace(bad)


class TestRetention:
    async def test_spans_older_than_the_window_go(self, traces: TraceService, db: Database):
        old = a_trace(at_ms=-40 * DAY_MS)
        recent = a_trace(at_ms=-DAY_MS)
        await traces.ingest(export_request(*old, *recent, start_ns=NOW_NS))
        retention = HistoryRetention(db, HISTORY_TABLES, retention_days=30, row_cap=None)
        assert await retention.sweep(now_ms=NOW_MS) == 2
        since = NOW_MS - 60 * DAY_MS
        left = (await traces.list_traces(since=since)).traces
        assert [t.traceId for t in left] == [recent[0].trace_id.hex()]

    async def test_the_memory_cap_keeps_the_newest_spans(self, traces: TraceService, db: Database):
        for i in range(3):
            await traces.ingest(export_request(*a_trace(at_ms=-i * 1000), start_ns=NOW_NS))
        retention = HistoryRetention(db, HISTORY_TABLES, retention_days=None, row_cap=4)
        assert await retention.trim() == 2
        assert await stored_count(db) == 4
