"""Every page of the navigation (web/ui.py PAGE_MODULES) on a phone (390 x 844) and a
desktop (1400 x 900), signed in as the admin of a licensed install watching a real Valkey
that has slow log entries, latency events, ACL log entries, keys and a trace to show:

- the page's heading starts just under the top bar, not half a screen down;
- on a phone the top bar itself stays short, so the heading is near the top of the screen;
- no table is cut off: each one fits the screen, or scrolls sideways inside its own box,
  which is on the screen and reaches the whole table.

One service and one signed-in browser context per width serve the whole module.
"""

import re
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
import valkey
from playwright.async_api import Browser, Page, StorageState, ViewportSize, expect

from svc_monitor.web.ui import PAGE_MODULES
from tests.fixtures.app import target_of
from tests.fixtures.browser import LiveService, live_service
from tests.fixtures.licensing import SigningKey
from tests.fixtures.servers import RunningServer, ServerFactory
from tests.traces.builders import SpanSpec, export_request, new_trace_id

pytestmark = pytest.mark.slow

PHONE = ViewportSize(width=390, height=844)
WIDE = ViewportSize(width=1400, height=900)
PATHS = [module.PAGE.path for module in PAGE_MODULES]
# Under the bar: the main area's padding and the heading's own line box, with room for a
# one-line notice; the empty row this guards against was 400 px and more.
UNDER_THE_BAR = 32
# A phone's bar in three rows: brand, Menu and who is signed in; the connection; its buttons.
PHONE_HEADING_TOP = 150


@pytest.fixture(scope="module")
def watched(server_factory: ServerFactory) -> Iterator[RunningServer]:
    """A Valkey with something in every live view: slow log entries (every command is
    slow), a latency event, a failed AUTH in the ACL log, and keys to sample."""
    server = server_factory.start(
        "valkey",
        config={"slowlog-log-slower-than": "0", "enable-debug-command": "yes"},
    )
    try:
        with server.client() as client:
            client.mset({f"layout:{i}": "x" * i for i in range(200)})
            client.config_set("latency-monitor-threshold", "1")
            client.execute_command("DEBUG", "SLEEP", "0.02")
            with pytest.raises((valkey.AuthenticationError, valkey.ResponseError)):
                client.execute_command("AUTH", "nobody", "wrong password")
        yield server
    finally:
        server_factory.stop(server)


@pytest.fixture(scope="module")
async def service(watched: RunningServer, signing_key: SigningKey) -> AsyncIterator[LiveService]:
    async with live_service(
        **target_of(watched),
        WORKSPACE_DISABLED=False,
        SVC_OFFLINE_LICENSE=signing_key.mint(tier="enterprise"),
        HISTORY_SAMPLE_INTERVAL_MS=1000,
        SLOWLOG_POLL_INTERVAL_MS=500,
        LATENCY_POLL_INTERVAL_MS=1000,
    ) as running:
        trace = new_trace_id()
        root = SpanSpec("POST /checkout", trace, duration_ms=20, attributes={"http.route": "/x"})
        child = SpanSpec("cache.get", trace, parent=root.span_id, start_ms=2, duration_ms=5)
        async with httpx.AsyncClient(base_url=running.url) as client:
            sent = await client.post(
                "/v1/traces",
                content=export_request(root, child).SerializeToString(),
                headers={"content-type": "application/x-protobuf"},
            )
            assert sent.status_code == 200, sent.text
        yield running


@pytest.fixture(scope="module")
async def signed_in(browser: Browser, service: LiveService) -> StorageState:
    """The admin's cookies, after claiming the fresh install through its page."""
    context = await browser.new_context(viewport=WIDE)
    try:
        page = await context.new_page()
        await page.goto(service.url + "/")
        await expect(page).to_have_url(re.compile(r"/register$"))
        await page.fill('input[name="name"]', "Ada Admin")
        await page.fill('input[name="email"]', "ada@example.com")
        await page.fill('input[name="password"]', "correct horse battery")
        await page.click('[data-action="claim"]')
        await expect(page.locator("[data-account] .account-name")).to_have_text("Ada Admin")
        return await context.storage_state()
    finally:
        await context.close()


@pytest.fixture(scope="module", params=["phone", "wide"])
async def tab(
    request: pytest.FixtureRequest, browser: Browser, signed_in: StorageState
) -> AsyncIterator[tuple[str, Page]]:
    size = PHONE if request.param == "phone" else WIDE
    context = await browser.new_context(viewport=size, storage_state=signed_in)
    errors: list[str] = []
    try:
        page = await context.new_page()
        page.set_default_timeout(15_000)
        page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        yield request.param, page
    finally:
        await context.close()
    assert not errors, errors


async def settle(page: Page) -> None:
    """Wait for what a page fetches after load (charts, htmx panels) to have landed."""
    await page.wait_for_load_state("networkidle")
    for figure in await page.locator("[data-chart]").all():
        await expect(figure).to_have_attribute("data-point-count", re.compile(r"\d"))


# Where the heading is, and each visible table that neither fits the screen nor scrolls
# inside a box of its own that is on the screen and as wide as the table.
MEASURE = """() => {
  const screen = document.documentElement.clientWidth;
  const bar = document.querySelector('.topbar').getBoundingClientRect().bottom;
  const heading = document.querySelector('main h1').getBoundingClientRect().top;
  const scroller = (el) => {
    for (let box = el.parentElement; box && box !== document.body; box = box.parentElement) {
      if (/(auto|scroll)/.test(getComputedStyle(box).overflowX)) return box;
    }
    return null;
  };
  const cut = [];
  for (const table of document.querySelectorAll('main table')) {
    if (!table.getClientRects().length) continue;  // folded away (a closed <details>)
    const edge = table.getBoundingClientRect();
    if (edge.left >= -1 && edge.right <= screen + 1) continue;
    const box = scroller(table);
    const boxEdge = box && box.getBoundingClientRect();
    if (box && boxEdge.left >= -1 && boxEdge.right <= screen + 1
        && box.scrollWidth >= Math.floor(edge.width)) continue;
    const name = table.getAttribute('aria-label') || table.querySelector('caption')?.textContent
      || table.className || table.querySelector('th')?.textContent || 'a table';
    cut.push(`${name.trim()}: ${Math.round(edge.left)}..${Math.round(edge.right)} of ${screen} px`);
  }
  const data = document.querySelectorAll('main table:not(.u-legend)').length;
  return { bar, heading, cut, tables: data };
}"""


async def test_every_page_starts_at_the_top_with_no_table_cut_off(
    tab: tuple[str, Page], service: LiveService
):
    width, page = tab
    # The navigation lists exactly these pages (and the API docs, Swagger UI's own layout).
    await page.goto(service.url + "/")
    listed = await page.locator("#nav a").evaluate_all("links => links.map((a) => a.pathname)")
    assert listed == [*PATHS, "/api"]

    found: dict[str, Any] = {}
    tables = 0
    for path in PATHS:
        await page.goto(service.url + path)
        await settle(page)
        facts = await page.evaluate(MEASURE)
        tables += facts["tables"]
        problems = []
        if facts["heading"] - facts["bar"] > UNDER_THE_BAR:
            problems.append(
                f"heading {facts['heading']:.0f} px down, bar ends at {facts['bar']:.0f}"
            )
        if width == "phone" and facts["heading"] > PHONE_HEADING_TOP:
            problems.append(f"heading {facts['heading']:.0f} px down a {PHONE['height']} px screen")
        problems += facts["cut"]
        if problems:
            found[path] = problems
    assert not found
    assert tables >= 15  # the walk saw the tables it is about (chart legends aside)


async def test_the_check_sees_a_table_cut_off(tab: tuple[str, Page], service: LiveService):
    """So that an empty list above means tables that fit or scroll, not a check that
    never looked: a table taken out of its box runs past a phone's edge."""
    _, page = tab
    for _ in range(20):  # bounded: entries arrive with the next slow log poll
        await page.goto(service.url + "/slowlog")
        if await page.locator("table.log-entries [data-entry]").count():
            break
        await page.wait_for_timeout(500)
    await page.evaluate(
        """() => {
          const table = document.querySelector('table.log-entries');
          table.closest('.table-wrap').replaceWith(table);
          table.style.width = '1800px';
        }"""
    )
    facts = await page.evaluate(MEASURE)
    assert [c for c in facts["cut"] if c.startswith("log-entries")], facts
