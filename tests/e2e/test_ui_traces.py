"""The AI Traces page in a real Chromium, fed by the real OpenTelemetry Python SDK.

The SDK exports over OTLP/HTTP (protobuf, `requests`) to POST /v1/traces of a live
service, as an application configured by its user would; the page must draw the
trace's waterfall and set it against the watched Valkey's history.
"""

import asyncio
import re
import time

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import Status, StatusCode
from playwright.async_api import expect

from svc_monitor.services import Services
from svc_monitor.web.rendering import MISSING
from tests.fixtures.app import target_of
from tests.fixtures.browser import LiveServiceFactory, PageFactory
from tests.fixtures.servers import RunningServer
from tests.fixtures.waiting import eventually

pytestmark = pytest.mark.slow


def send_checkout_trace(endpoint: str) -> str:
    """A root with two children, the second failing with an event; the trace id (hex).

    Blocking (the SDK's exporter uses `requests`): run it off the event loop that
    serves the app.
    """
    provider = TracerProvider(resource=Resource.create({"service.name": "checkout-web"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
    tracer = provider.get_tracer("@svc/test-app")
    with tracer.start_as_current_span("POST /checkout") as root:
        with tracer.start_as_current_span("cache.lookup") as lookup:
            lookup.set_attribute("cache.key", "cart:42")
            lookup.set_attribute("cache.hit", False)
            time.sleep(0.02)
        with tracer.start_as_current_span("llm.answer") as answer:
            answer.add_event("rate_limited", {"retry.after_ms": 250})
            answer.set_status(Status(StatusCode.ERROR, "upstream answered 429"))
            time.sleep(0.01)
    assert provider.force_flush(10_000)
    provider.shutdown()
    return format(root.get_span_context().trace_id, "032x")


async def test_an_sdk_trace_renders_as_a_waterfall(
    live_service_factory: LiveServiceFactory,
    open_page: PageFactory,
    valkey_server: RunningServer,
):
    async with live_service_factory(
        **target_of(valkey_server), HISTORY_SAMPLE_INTERVAL_MS=200
    ) as live:
        services: Services = live.app.state.services
        connection = (await services.connections.list())[0]

        async def sampled() -> bool:
            history = await services.info_history.history(
                connection.id, since=None, until=None, max_points=10
            )
            return any(p.samples for p in history.points)

        await eventually(sampled)  # the instance has history before the trace runs
        trace_id = await asyncio.to_thread(send_checkout_trace, f"{live.url}/v1/traces")
        assert services.traces.spans_stored == 3

        async with open_page(f"{live.url}/ai-traces") as page:
            listed = page.locator(f'tr[data-trace="{trace_id}"]')
            await expect(listed).to_contain_text("POST /checkout")
            await expect(listed).to_contain_text("checkout-web")
            await expect(listed.locator(".badge-error")).to_have_text("error")

            waterfall = page.locator(f'[data-section="waterfall"][data-trace-id="{trace_id}"]')
            rows = waterfall.locator("a.wf-row")
            await expect(rows).to_have_count(3)
            await expect(waterfall.locator("rect[data-bar]")).to_have_count(3)
            await expect(rows.nth(0)).to_have_attribute("data-depth", "0")
            await expect(rows.nth(1)).to_have_attribute("data-depth", "1")
            await expect(rows.nth(1)).to_contain_text("cache.lookup")
            failed = rows.nth(2)
            await expect(failed).to_contain_text("llm.answer")
            await expect(failed).to_have_attribute("data-status", "error")
            await expect(failed).to_have_class(re.compile(r"\bwf-error\b"))
            await expect(failed.locator("rect.wf-event")).to_have_count(1)

            # Bars are placed by start and sized by duration on a 0-1000 scale.
            boxes = [await rows.nth(i).locator("rect[data-bar]").bounding_box() for i in range(3)]
            root_bar, lookup_bar, answer_bar = boxes
            assert root_bar is not None
            assert lookup_bar is not None
            assert answer_bar is not None
            assert lookup_bar["x"] < answer_bar["x"]  # the lookup ran first
            assert lookup_bar["width"] < root_bar["width"]
            assert answer_bar["x"] + answer_bar["width"] <= root_bar["x"] + root_bar["width"] + 1

            await failed.click()
            detail = page.locator("#span-detail")
            await expect(detail.locator("h3")).to_have_text("llm.answer")
            await expect(failed).to_have_attribute("aria-current", "true")  # the selection moved
            await expect(rows.nth(0)).not_to_have_attribute("aria-current", "true")
            await expect(detail.locator('[data-field="status"]')).to_have_text(
                "error: upstream answered 429"
            )
            await expect(detail.locator('[data-event="rate_limited"]')).to_contain_text("250")
            span_id = await failed.get_attribute("data-span")
            # The address names the span: a reload or a shared link opens it again.
            await expect(page).to_have_url(
                f"{live.url}/ai-traces?window=1h&trace={trace_id}&span={span_id}"
            )

            # The swapped-in block shows times in the browser's zone too, like the page.
            await expect(waterfall.locator("time")).not_to_have_text(re.compile(r"Z$"))

            await rows.nth(1).click()
            await expect(detail.locator('[data-attribute="cache.key"]')).to_contain_text("cart:42")

            state = page.locator('[data-section="instance-state"]')
            await expect(state.locator('[data-metric="usedMemory"] .card-value')).to_contain_text(
                "B"
            )
            await expect(
                state.locator('[data-metric="connectedClients"] .card-value')
            ).not_to_have_text(MISSING)
            await expect(state.locator('[data-metric="opsPerSec"]')).to_be_visible()


async def test_empty_page_explains_how_to_send(
    live_service_factory: LiveServiceFactory,
    open_page: PageFactory,
    valkey_server: RunningServer,
):
    async with (
        live_service_factory(**target_of(valkey_server)) as live,
        open_page(f"{live.url}/ai-traces") as page,
    ):
        how = page.locator('[data-state="how-to-send"]')
        await expect(how.locator("[data-endpoint]")).to_have_text(f"{live.url}/v1/traces")
        await expect(how).to_contain_text('get_tracer("@svc/my-app")')
        await expect(page.get_by_role("link", name="AI Traces")).to_have_attribute(
            "aria-current", "page"
        )
