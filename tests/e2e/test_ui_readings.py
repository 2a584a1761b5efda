"""What the pages' figures say, read in a real Chromium against live services and a real
Valkey: the network rate's unit (the card and the chart agree, and it is what the engine
computes), the latency table's workload apart from svc-monitor's own polls, the doctors'
reports as paragraphs and lists (escaped, the raw text kept), a trace whose spans left
their status unset, and the forecast charts' axis labels (size, contrast, no overlap).

The page fixture fails each test on any console error and any request off this machine.
"""

import asyncio
import re
import threading
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
import valkey
from playwright.async_api import Page, ViewportSize, expect

from svc_monitor.web.rendering import MISSING
from svc_monitor.web.shell import CONNECTION_COOKIE
from tests.fixtures.app import RunningApp, target_of
from tests.fixtures.browser import PHONE, LiveService, LiveServiceFactory, PageFactory
from tests.fixtures.servers import RunningServer, ServerFactory
from tests.forecast.history import MB, push_connection, record, steady_memory
from tests.traces.builders import SpanSpec, export_request, new_trace_id

pytestmark = pytest.mark.slow

WORKER = "readings-worker"


@pytest.fixture(scope="module")
def server(server_factory: ServerFactory) -> Iterator[RunningServer]:
    started = server_factory.start("valkey", config={"enable-debug-command": "yes"})
    yield started
    server_factory.stop(started)


@pytest.fixture
async def service(
    live_service_factory: LiveServiceFactory, server: RunningServer
) -> AsyncIterator[LiveService]:
    async with live_service_factory(
        **target_of(server), HISTORY_SAMPLE_INTERVAL_MS=500, LATENCY_POLL_INTERVAL_MS=500
    ) as live:
        yield live


def info_stats(client: valkey.Valkey) -> dict[str, Any]:
    stats = client.info("stats")
    assert isinstance(stats, dict)
    return stats


class Traffic:
    """A client writing 8 KiB values as fast as it can until stopped (30 s at most)."""

    def __init__(self, server: RunningServer) -> None:
        self._server = server
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        value = b"x" * 8192
        deadline = time.monotonic() + 30
        with self._server.client() as client:
            while not self._stop.is_set() and time.monotonic() < deadline:
                client.set("readings:traffic", value)

    def __enter__(self) -> "Traffic":
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)


def measured_input_kib_s(server: RunningServer) -> tuple[float, float]:
    """(bytes per second over 1.6 s / 1024, the engine's instantaneous_input_kbps): the
    engine samples its byte counter every 100 ms and averages the last 16 samples."""
    with server.client() as client:
        before, started = info_stats(client)["total_net_input_bytes"], time.monotonic()
        time.sleep(1.6)
        after = info_stats(client)
        elapsed = time.monotonic() - started
    return (after["total_net_input_bytes"] - before) / elapsed / 1024, float(
        after["instantaneous_input_kbps"]
    )


async def test_the_network_card_and_chart_say_kib_per_second_as_the_engine_counts(
    service: LiveService, open_page: PageFactory, server: RunningServer
):
    with Traffic(server):
        await asyncio.sleep(2)  # the engine's 1.6 s average covers the traffic only
        rate, reported = await asyncio.to_thread(measured_input_kib_s, server)
        # The INFO field is named kbps, but it is bytes per second over 1024: kilobits
        # would read 8.2 times the measured rate.
        assert 0.5 < reported / rate < 2, (reported, rate)
        async with open_page(service.url + "/") as page:
            card = page.locator('[data-metric="network"]')
            await expect(card.locator(".card-hint")).to_have_text("KiB/s in / out")
            shown = await card.locator(".card-value").inner_text()
            card_input = float(shown.split("/")[0].replace(",", ""))
            assert 0.4 < card_input / rate < 2.5, (shown, rate)

            chart = page.locator('[data-chart][data-series="netInputKbps,netOutputKbps"]')
            await expect(chart).to_have_attribute("data-point-count", re.compile(r"^[1-9]"))
            legend = chart.locator(".u-legend .u-series .u-label")
            await expect(legend.nth(1)).to_have_text("Input (KiB/s)")
            await expect(legend.nth(2)).to_have_text("Output (KiB/s)")


@pytest.fixture
def worker(server: RunningServer) -> Iterator[valkey.Valkey]:
    """An application connection with a workload of its own."""
    with server.client() as conn:
        conn.client_setname(WORKER)
        conn.execute_command("CONFIG", "RESETSTAT")  # the histogram counts from here
        for n in range(40):
            conn.set(f"readings:{n}", n)
        for n in range(30):
            conn.get(f"readings:{n}")
        for n in range(20):
            conn.hset("readings:hash", f"f{n}", n)
        yield conn


OWN_POLLS = ("info", "latency|latest", "latency|histogram", "config|get")


async def test_latency_lists_the_workload_with_svc_monitors_own_polls_apart(
    service: LiveService, open_page: PageFactory, worker: valkey.Valkey
):
    async with open_page(service.url + "/latency") as page:
        section = page.locator('[data-section="latency-histogram"]')
        for _ in range(20):  # bounded: the first polls land within a second or two
            # The latency poll's own LATENCY HISTOGRAM is in the histogram it reads from its
            # second pass after the RESETSTAT on: wait for both of our rows.
            info_row = section.locator('tr[data-command="info"]')
            histogram_row = section.locator('tr[data-command="latency|histogram"]')
            if await info_row.count() and await histogram_row.count():
                break
            await page.wait_for_timeout(500)
            await page.reload()
        workload = section.locator('[data-group="workload"]')
        await expect(workload.get_by_role("heading", name="Workload")).to_be_visible()
        listed = await workload.locator("tr[data-command]").evaluate_all(
            "rows => rows.map((r) => r.dataset.command)"
        )
        assert {"set", "get", "hset"} <= set(listed), listed
        assert not set(listed) & set(OWN_POLLS), listed
        calls = workload.locator('tr[data-command="set"] [data-field="calls"]')
        await expect(calls).to_have_text("40")
        # svc-monitor sends no SET: nothing of it is counted as ours.
        await expect(workload.locator('tr[data-command="set"] [data-field="ours"]')).to_have_text(
            MISSING
        )

        # Our polls are in their own group, folded away until asked for.
        own = section.locator('details[data-group="own"]')
        summary = own.locator("summary")
        await expect(summary).to_have_text(
            re.compile(r"^svc-monitor's own polls: \d+ commands, [\d,]+ calls$")
        )
        info = own.locator('tr[data-command="info"]')
        await expect(info).to_be_hidden()
        await summary.click()
        await expect(info).to_be_visible()
        # Counted by svc-monitor since it started (the server's count began at RESETSTAT).
        await expect(info.locator('[data-field="ours"]')).to_have_text(re.compile(r"^[1-9][\d,]*$"))
        mine = await own.locator("tr[data-command]").evaluate_all(
            "rows => rows.map((r) => r.dataset.command)"
        )
        assert {"info", "latency|histogram"} <= set(mine), mine
        assert not {"set", "get", "hset"} & set(mine), mine


# The doctor's findings as the page shows them, and the raw text it keeps.
DOCTOR = """(section) => {
  const box = document.querySelector(`[data-section="${section}"] [data-doctor]`);
  const advice = box.querySelector('[data-advice]');
  return {
    paragraphs: box.querySelectorAll(':scope > p').length,
    steps: [...box.querySelectorAll(':scope > ol > li')].map((li) => li.textContent.trim()),
    titles: [...box.querySelectorAll('ol > li > [data-title]')].map((t) => t.textContent),
    advice: advice ? [...advice.querySelectorAll('li')].map((li) => li.textContent.trim()) : [],
    adviceBackground: advice ? getComputedStyle(advice).backgroundColor : null,
    boxBackground: getComputedStyle(box).backgroundColor,
    code: [...box.querySelectorAll(':scope > p code, li code')].map((c) => c.textContent),
    raw: box.querySelector('details [data-raw]').textContent,
    rawShown: Boolean(box.querySelector('details[open]')),
    injected: document.querySelectorAll('main milliseconds').length,
  };
}"""


def words(text: str) -> str:
    """Text compared as a reader sees it: the page shows a quoted command as code, without
    its quotes or the full stop the engine put inside them."""
    return " ".join(re.sub(r"['\".]", "", text).split())


async def test_the_latency_doctor_reads_as_findings_and_advice_with_the_raw_text_kept(
    service: LiveService, open_page: PageFactory, server: RunningServer
):
    with server.client() as conn:
        conn.config_set("latency-monitor-threshold", "0")
        disabled = conn.execute_command("LATENCY", "DOCTOR")
    # The engine's own text holds "<milliseconds>": shown as text, never as markup.
    assert "<milliseconds>" in disabled
    async with open_page(service.url + "/latency") as page:
        shown = await page.evaluate(DOCTOR, "latency-doctor")
        assert shown["injected"] == 0
        assert any("<milliseconds>" in c for c in shown["code"]), shown["code"]
        assert words(shown["raw"]) == words(disabled)
        assert not shown["rawShown"]  # folded away under the readable version

    with server.client() as conn:
        conn.config_set("latency-monitor-threshold", "1")
        conn.execute_command("DEBUG", "SLEEP", "0.03")
        report = conn.execute_command("LATENCY", "DOCTOR")
    advice = [line[2:] for line in report.splitlines() if line.startswith("- ")]
    assert advice, report
    async with open_page(service.url + "/latency") as page:
        shown = await page.evaluate(DOCTOR, "latency-doctor")
        assert "command" in shown["titles"], shown  # "1. command: 1 latency spikes ..."
        assert [words(a) for a in shown["advice"]] == [words(a) for a in advice]
        # The advice stands apart from the rest of the report.
        assert shown["adviceBackground"] != shown["boxBackground"]
        assert words(shown["raw"]) == words(report)
        raw = page.locator('[data-section="latency-doctor"] details')
        await raw.locator("summary").click()
        await expect(raw.locator("[data-raw]")).to_be_visible()


async def test_the_memory_doctor_reads_as_paragraphs_with_the_raw_text_kept(
    service: LiveService, open_page: PageFactory, server: RunningServer
):
    with server.client() as conn:
        report = conn.execute_command("MEMORY", "DOCTOR")
    async with open_page(service.url + "/memory") as page:
        shown = await page.evaluate(DOCTOR, "memory-doctor")
        assert shown["paragraphs"] >= 1
        assert words(shown["raw"]) == words(report)
        text = await page.locator(
            '[data-section="memory-doctor"] [data-doctor] > p'
        ).all_text_contents()
        assert words(" ".join(text)) in words(report)


def a_trace(name: str, status: int) -> list[SpanSpec]:
    trace = new_trace_id()
    root = SpanSpec(name, trace, duration_ms=20, status=status)
    return [root, SpanSpec("cache.get", trace, parent=root.span_id, start_ms=2, duration_ms=5)]


async def test_a_trace_left_unset_gets_its_own_neutral_badge(
    service: LiveService, open_page: PageFactory
):
    traces = {"unset": a_trace("GET /unset", 0), "ok": a_trace("GET /ok", 1)}
    traces["error"] = a_trace("GET /error", 2)
    async with httpx.AsyncClient(base_url=service.url) as client:
        for spans in traces.values():
            sent = await client.post(
                "/v1/traces",
                content=export_request(*spans).SerializeToString(),
                headers={"content-type": "application/x-protobuf"},
            )
            assert sent.status_code == 200, sent.text
    async with open_page(service.url + "/ai-traces") as page:
        colours = {}
        for status, spans in traces.items():
            badge = page.locator(f'tr[data-trace="{spans[0].trace_id.hex()}"] .badge')
            await expect(badge).to_have_text(status)
            await expect(badge).to_have_attribute("data-status", status)
            colours[status] = await badge.evaluate("b => getComputedStyle(b).color")
        assert len(set(colours.values())) == 3, colours  # three looks, not two
        muted = await page.evaluate(
            "() => { const p = document.createElement('p'); p.className = 'updated';"
            " document.querySelector('main').append(p);"
            " const c = getComputedStyle(p).color; p.remove(); return c; }"
        )
        assert colours["unset"] == muted  # neutral: the page's muted grey

        # The trace's own view says unset too.
        await page.goto(f"{service.url}/ai-traces?trace={traces['unset'][0].trace_id.hex()}")
        header = page.locator('[data-section="waterfall"] .section-head .badge')
        await expect(header).to_have_text("unset")


# Each drawn forecast chart's axes: the label font size, the contrast of the label colour
# on the chart's background, and any two tick labels of an axis that touch.
AXES = """() => {
  const rgb = (colour) => {
    const c = document.createElement('canvas').getContext('2d');
    c.fillStyle = colour;
    c.fillRect(0, 0, 1, 1);
    return [...c.getImageData(0, 0, 1, 1).data].slice(0, 3);
  };
  const luminance = (colour) => {
    const [r, g, b] = rgb(colour).map((v) => v / 255)
      .map((v) => (v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4));
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const contrast = (a, b) => {
    const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x);
    return (hi + 0.05) / (lo + 0.05);
  };
  const measure = document.createElement('canvas').getContext('2d');
  const out = [];
  for (const figure of document.querySelectorAll('[data-forecast-chart]')) {
    const u = figure.uplot;
    if (!u) continue;
    const background = getComputedStyle(figure).backgroundColor;
    u.axes.forEach((axis, i) => {
      if (!axis.show) return;
      const [font, size] = axis.font;
      measure.font = font;
      const labels = (axis._values || []).map((text, n) => {
        const lines = String(text).split('\\n');
        const at = u.valToPos(axis._splits[n], axis.scale);
        const width = Math.max(...lines.map((l) => measure.measureText(l).width));
        return { text, at, width, height: lines.length * size };
      });
      const touching = [];
      for (let n = 1; n < labels.length; n++) {
        const [a, b] = [labels[n - 1], labels[n]];
        const apart = i === 0 ? Math.abs(b.at - a.at) - (a.width + b.width) / 2
                              : Math.abs(b.at - a.at) - size;
        if (apart < 4) touching.push(`${a.text} | ${b.text}`);
      }
      out.push({
        chart: figure.closest('[data-forecast]').dataset.forecast,
        axis: axis.scale,
        size,
        labelSize: axis.label ? axis.labelFont[1] : null,
        contrast: contrast(axis.stroke(u, i), background),
        labels: labels.length,
        touching,
      });
    });
  }
  return out;
}"""


@pytest.fixture
async def forecasting(service: LiveService) -> str:
    """A push connection with two hours of memory growing toward its maxmemory."""
    async with httpx.AsyncClient(base_url=service.url) as client:
        running = RunningApp(service.app, client, service.app.state.services.settings)
        connection = await push_connection(running)
        await record(
            running, connection, samples=121, fields=steady_memory(100 * MB, MB, maxmemory=512 * MB)
        )
    return connection


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("width", ["phone", "desktop"])
async def test_forecast_axis_labels_are_legible_and_never_touch(
    service: LiveService, open_page: PageFactory, forecasting: str, width: str, scheme: str
):
    viewport = PHONE if width == "phone" else ViewportSize(width=1400, height=900)
    async with open_page(service.url + "/login", viewport=viewport, color_scheme=scheme) as page:
        await page.context.add_cookies(
            [{"name": CONNECTION_COOKIE, "value": forecasting, "url": service.url}]
        )
        await page.goto(service.url + "/forecasting")
        memory = page.locator('[data-forecast="usedMemory"] [data-forecast-chart]')
        await expect(memory).to_have_attribute("data-point-count", "121")
        axes = await drawn_axes(page)
        assert {(a["chart"], a["axis"]) for a in axes} >= {("usedMemory", "x"), ("usedMemory", "y")}
        for axis in axes:
            assert axis["size"] >= 13, axis  # px: uPlot's own 12 px was the complaint
            assert axis["labelSize"] in (None, 13), axis
            assert axis["contrast"] >= 7, axis  # WCAG AAA for text of this size
            assert axis["labels"] >= 2, axis
            assert not axis["touching"], axis


async def drawn_axes(page: Page) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = await page.evaluate(AXES)
    return found
