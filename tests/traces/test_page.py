"""The AI Traces page over HTTP: what it says in each state (the browser test draws it)."""

import time

from tests.fixtures.app import AppFactory, RunningApp
from tests.traces.builders import MS, SpanSpec, new_trace_id
from tests.traces.test_api import export


def checkout(*, status: int = 0) -> list[SpanSpec]:
    trace_id = new_trace_id()
    root = SpanSpec("POST /checkout", trace_id, scope="starlette", duration_ms=30)
    child = SpanSpec("llm.answer", trace_id, parent=root.span_id, start_ms=5, status=status)
    return [root, child]


async def page(app: RunningApp, query: str = "") -> str:
    response = await app.client.get(f"/ai-traces?{query}")
    assert response.status_code == 200, response.text
    return response.text


class TestStates:
    async def test_empty_explains_the_endpoint(self, api: RunningApp):
        html = await page(api)
        assert 'data-state="how-to-send"' in html
        assert "http://svc.test/v1/traces" in html
        assert "Authorization: Bearer" not in html

    async def test_empty_names_the_token_header_when_one_is_set(
        self, memory_app_factory: AppFactory
    ):
        async with memory_app_factory(OTEL_INGEST_TOKEN="s3cret-token") as app:
            html = await page(app)
        assert "Authorization: Bearer &lt;OTEL_INGEST_TOKEN&gt;" in html
        assert "s3cret-token" not in html

    async def test_receiver_off_is_said(self, memory_app_factory: AppFactory):
        async with memory_app_factory(OTEL_INGEST_ENABLED=False) as app:
            assert 'data-state="ingest-off"' in await page(app)

    async def test_the_newest_trace_is_drawn(self, api: RunningApp):
        older, newer = checkout(), checkout(status=2)
        await export(api, *older, start_ns=time.time_ns() - 60_000 * MS)
        await export(api, *newer)
        html = await page(api)
        assert f'data-trace-id="{newer[0].trace_id.hex()}"' in html
        assert html.count("data-bar ") == 2
        assert 'data-status="error"' in html
        assert 'data-state="how-to-send"' not in html

    async def test_a_trace_before_any_history_says_so(self, api: RunningApp):
        spans = checkout()
        await export(api, *spans, start_ns=time.time_ns() - 2 * 86_400_000 * MS)
        html = await page(api, f"window=7d&trace={spans[0].trace_id.hex()}")
        assert 'data-state="no-history"' in html
        assert "No history at that time for" in html

    async def test_an_unknown_trace_is_a_notice_not_an_error(self, api: RunningApp):
        html = await page(api, f"trace={'ab' * 16}")
        assert 'data-state="no-trace"' in html
        assert f"No stored trace has the id {'ab' * 16}" in html

    async def test_filters_narrow_the_list(self, api: RunningApp):
        ok, failed = checkout(status=1), checkout(status=2)
        await export(api, *ok, *failed)
        response = await api.client.get("/ui/ai-traces/list?status=error")
        assert f'data-trace="{failed[0].trace_id.hex()}"' in response.text
        assert f'data-trace="{ok[0].trace_id.hex()}"' not in response.text
        html = await page(api, "status=ok&min=abc&window=nope")  # unusable values: defaults
        assert '<option value="ok" selected>' in html
        assert f'data-trace="{ok[0].trace_id.hex()}"' in html

    async def test_a_custom_from_to_window_lists_the_traces_it_holds(self, api: RunningApp):
        earlier, recent = checkout(), checkout()
        day_ago = time.time_ns() - 86_400_000 * MS
        await export(api, *earlier, start_ns=day_ago)
        await export(api, *recent)
        start = day_ago // MS - 600_000
        html = await page(api, f"from={start}&to={start + 1_200_000}")
        assert f'data-trace="{earlier[0].trace_id.hex()}"' in html
        assert f'data-trace="{recent[0].trace_id.hex()}"' not in html
        assert f'name="from" value="{start}"' in html
        # From after To is no window: the default hour again.
        html = await page(api, f"from={start + 1_200_000}&to={start}")
        assert f'data-trace="{recent[0].trace_id.hex()}"' in html
        assert f'data-trace="{earlier[0].trace_id.hex()}"' not in html


class TestSpanView:
    async def test_a_span_shows_its_attributes_and_events(self, api: RunningApp):
        spans = checkout(status=2)
        spans[1].attributes = {"gen_ai.request.model": "small-1"}
        spans[1].events = [("retry", 10.0, {"attempt": 2})]
        await export(api, *spans)
        trace_id, span_id = spans[0].trace_id.hex(), spans[1].span_id.hex()
        response = await api.client.get(f"/ui/ai-traces/view?trace={trace_id}&span={span_id}")
        assert response.status_code == 200
        html = response.text
        assert f'data-span-detail="{span_id}"' in html
        assert 'data-attribute="gen_ai.request.model"' in html
        assert "small-1" in html
        assert 'data-event="retry"' in html

    async def test_an_unknown_span_shows_the_root(self, api: RunningApp):
        spans = checkout()
        await export(api, *spans)
        trace_id = spans[0].trace_id.hex()
        html = (await api.client.get(f"/ui/ai-traces/view?trace={trace_id}&span=nope")).text
        assert f'data-span-detail="{spans[0].span_id.hex()}"' in html

    async def test_a_malformed_trace_id_is_a_notice(self, api: RunningApp):
        response = await api.client.get("/ui/ai-traces/view?trace=xyz")
        assert response.status_code == 200
        assert "traceId must be 32 hexadecimal characters" in response.text
