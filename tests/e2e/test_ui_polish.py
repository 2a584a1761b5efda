"""The UI on a phone (390 px) and a desktop (1400 px), signed in as the admin, watching a
real Valkey: the skip link, the folding navigation, tables that scroll in their own box,
charts that speak words and units, a custom time range kept in the URL, and axe-core's
serious and critical findings on every page (none allowed).

One service and one signed-in browser context per width serve the whole module: Chromium
is the costly part here.
"""

import re
from collections.abc import AsyncIterator, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.async_api import (
    Browser,
    BrowserContext,
    Page,
    StorageState,
    ViewportSize,
    expect,
)

from tests.fixtures.app import target_of
from tests.fixtures.axe import violations
from tests.fixtures.browser import LiveService, live_service
from tests.fixtures.servers import RunningServer, ServerFactory

pytestmark = pytest.mark.slow

PHONE = ViewportSize(width=390, height=844)
WIDE = ViewportSize(width=1400, height=900)
NAME = "Ada Admin"
PASSWORD = "correct horse battery"
# A code name (usedMemory, opsPerSec) outside the unit in brackets (MiB is a unit).
CAMEL_CASE = re.compile(r"[a-z][A-Z](?![^(]*\))")


@pytest.fixture(scope="module")
def watched(server_factory: ServerFactory) -> Iterator[RunningServer]:
    # Every command lands in the slow log, so the slow log page has rows to scroll.
    server = server_factory.start("valkey", config={"slowlog-log-slower-than": "0"})
    try:
        client = server.client()
        client.mset({f"polish:{i}": "x" * i for i in range(50)})
        # Hits and misses, so the hit ratio has values to draw.
        for i in range(30):
            client.get(f"polish:{i}")
            client.get(f"polish:missing:{i}")
        yield server
    finally:
        server_factory.stop(server)


@pytest.fixture(scope="module")
async def service(watched: RunningServer) -> AsyncIterator[LiveService]:
    async with live_service(
        **target_of(watched),
        WORKSPACE_DISABLED=False,
        HISTORY_SAMPLE_INTERVAL_MS=1000,
        SLOWLOG_POLL_INTERVAL_MS=500,
        LATENCY_POLL_INTERVAL_MS=1000,
    ) as running:
        yield running


@pytest.fixture(scope="module")
async def signed_in(browser: Browser, service: LiveService) -> StorageState:
    """The admin's cookies, after claiming the fresh install through its page."""
    context = await browser.new_context(viewport=WIDE, bypass_csp=True)
    try:
        page = await context.new_page()
        await page.goto(service.url + "/")
        await expect(page).to_have_url(re.compile(r"/register$"))
        await page.fill('input[name="name"]', NAME)
        await page.fill('input[name="email"]', "ada@example.com")
        await page.fill('input[name="password"]', PASSWORD)
        await page.click('[data-action="claim"]')
        await expect(page.locator("[data-account] .account-name")).to_have_text(NAME)
        return await context.storage_state()
    finally:
        await context.close()


async def _context(browser: Browser, state: StorageState, size: ViewportSize) -> BrowserContext:
    # bypass_csp: axe is injected as an inline script, which the app's policy forbids.
    return await browser.new_context(
        viewport=size, storage_state=state, bypass_csp=True, color_scheme="light"
    )


class Tab:
    """One page of a context, failing the test that used it on any script error."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self.errors: list[str] = []
        page.set_default_timeout(15_000)
        page.on("pageerror", lambda e: self.errors.append(f"page error: {e}"))
        page.on(
            "console",
            lambda m: self.errors.append(f"console: {m.text}") if m.type == "error" else None,
        )


@pytest.fixture(scope="module")
async def phone_tab(browser: Browser, signed_in: StorageState) -> AsyncIterator[Tab]:
    context = await _context(browser, signed_in, PHONE)
    try:
        yield Tab(await context.new_page())
    finally:
        await context.close()


@pytest.fixture(scope="module")
async def wide_tab(browser: Browser, signed_in: StorageState) -> AsyncIterator[Tab]:
    context = await _context(browser, signed_in, WIDE)
    try:
        yield Tab(await context.new_page())
    finally:
        await context.close()


@pytest.fixture
async def phone(phone_tab: Tab) -> AsyncIterator[Page]:
    phone_tab.errors.clear()
    yield phone_tab.page
    assert not phone_tab.errors, phone_tab.errors


@pytest.fixture
async def wide(wide_tab: Tab) -> AsyncIterator[Page]:
    wide_tab.errors.clear()
    yield wide_tab.page
    assert not wide_tab.errors, wide_tab.errors


@pytest.fixture(scope="module")
async def pages(wide_tab: Tab, service: LiveService) -> list[str]:
    """Every page the admin's navigation lists (the API docs included)."""
    await wide_tab.page.goto(service.url + "/")
    paths: list[str] = await wide_tab.page.locator("#nav a").evaluate_all(
        "links => links.map((a) => a.getAttribute('href'))"
    )
    assert "/api" in paths
    assert len(paths) >= 12, paths
    return paths


async def settle(page: Page) -> None:
    """Wait for what a page fetches after load (charts, htmx panels) to have landed."""
    await page.wait_for_load_state("load")
    for figure in await page.locator("[data-chart]").all():
        await expect(figure).to_have_attribute("data-point-count", re.compile(r"\d"))


async def press_tab_focus(page: Page) -> dict[str, str]:
    await page.keyboard.press("Tab")
    focused: dict[str, str] = await page.evaluate(
        "({ text: document.activeElement.textContent.trim(), id: document.activeElement.id,"
        " inMain: String(Boolean(document.activeElement.closest('main'))) })"
    )
    return focused


class TestSkipLink:
    @pytest.mark.parametrize("width", ["phone", "wide"])
    async def test_is_the_first_tab_stop_and_moves_focus_to_the_content(
        self, width: str, phone: Page, wide: Page, service: LiveService
    ):
        page = phone if width == "phone" else wide
        await page.goto(service.url + "/slowlog")
        first = await press_tab_focus(page)
        assert first["text"] == "Skip to content"
        await expect(page.get_by_role("link", name="Skip to content")).to_be_in_viewport()
        await page.keyboard.press("Enter")
        assert await page.evaluate("document.activeElement.id") == "main"
        # The next Tab lands inside the page's own content, past the bar and the navigation.
        after = await press_tab_focus(page)
        assert after["inMain"] == "true", after


class TestNavigation:
    async def test_on_a_phone_the_pages_are_behind_the_menu_button(
        self, phone: Page, service: LiveService
    ):
        await phone.goto(service.url + "/")
        menu = phone.get_by_role("button", name="Menu")
        nav = phone.get_by_role("navigation", name="Pages")
        await expect(menu).to_be_visible()
        await expect(menu).to_have_attribute("aria-expanded", "false")
        await expect(menu).to_have_attribute("aria-controls", "nav")
        await expect(nav).to_be_hidden()

        await menu.focus()
        await phone.keyboard.press("Enter")
        await expect(menu).to_have_attribute("aria-expanded", "true")
        await expect(nav).to_be_visible()
        await nav.get_by_role("link", name="Slow log").click()
        await expect(phone).to_have_url(re.compile(r"/slowlog$"))

        # Escape folds it away again and gives the focus back to the button.
        await phone.get_by_role("button", name="Menu").click()
        await expect(nav).to_be_visible()
        await phone.keyboard.press("Escape")
        await expect(nav).to_be_hidden()
        await expect(phone.get_by_role("button", name="Menu")).to_be_focused()

    async def test_on_a_desktop_the_pages_are_listed_with_no_menu_button(
        self, wide: Page, service: LiveService
    ):
        await wide.goto(service.url + "/")
        await expect(wide.get_by_role("navigation", name="Pages")).to_be_visible()
        await expect(wide.get_by_role("button", name="Menu")).to_be_hidden()


class TestTables:
    async def test_no_page_is_wider_than_a_phone(
        self, phone: Page, service: LiveService, pages: list[str]
    ):
        too_wide = {}
        for path in pages:
            if path == "/api":
                continue  # Swagger UI's own layout, not ours
            await phone.goto(service.url + path)
            await settle(phone)
            overflow = await phone.evaluate(
                "document.documentElement.scrollWidth - window.innerWidth"
            )
            if overflow > 0:
                too_wide[path] = overflow
        assert not too_wide

    async def test_the_slow_logs_client_column_is_reached_by_scrolling_its_box(
        self, phone: Page, service: LiveService, watched: RunningServer
    ):
        address = re.compile(r"127\.0\.0\.1:\d+")
        for _ in range(20):  # bounded: entries arrive with the next slow log poll
            await phone.goto(service.url + "/slowlog")
            if await phone.locator("table.log-entries [data-entry]").count():
                break
            await phone.wait_for_timeout(500)
        table = phone.locator("table.log-entries")
        box = phone.locator(".table-wrap", has=table)
        client_head = table.get_by_role("columnheader", name="Client")
        first_client = table.locator("[data-entry] td").nth(3)
        await expect(client_head).not_to_be_in_viewport()

        # A keyboard user reaches the box, and the box says which table it holds.
        await expect(box).to_have_attribute("tabindex", "0")
        await expect(box).to_have_attribute("role", "region")
        await expect(box).to_have_attribute("aria-label", re.compile(r"\w"))
        await box.focus()
        for _ in range(60):  # bounded: each arrow press scrolls the box a step
            if await client_head.evaluate(
                "th => th.getBoundingClientRect().right <= window.innerWidth"
            ):
                break
            await phone.keyboard.press("ArrowRight")
        await expect(client_head).to_be_in_viewport()
        await expect(first_client).to_have_text(address)
        # The first column stays pinned while the rest scrolls past it.
        await expect(table.get_by_role("columnheader", name="Started")).to_be_in_viewport()
        assert await box.evaluate("b => b.scrollLeft") > 0


async def chart_facts(page: Page, series: str) -> dict[str, Any]:
    """What one drawn chart shows: its legend texts, its y-axis ticks and the axis top."""
    figure = page.locator(f'[data-chart][data-series="{series}"]')
    await expect(figure).to_have_attribute("data-point-count", re.compile(r"^[1-9]"))
    facts: dict[str, Any] = await figure.evaluate(
        """f => ({
            legend: [...f.querySelectorAll('.u-legend .u-series')].slice(1)
                .map((s) => s.querySelector('.u-label').textContent),
            ticks: f.uplot.axes[1]._values,
            axis: f.uplot.axes[1].label,
            top: f.uplot.scales.y.max,
        })"""
    )
    return facts


class TestCharts:
    async def test_legends_and_axes_are_words_with_units(self, wide: Page, service: LiveService):
        await wide.goto(service.url + "/")
        legends: list[str] = []
        for series in ("usedMemory", "opsPerSec", "cpuSysPercent,cpuUserPercent", "hitRatio"):
            facts = await chart_facts(wide, series)
            legends += facts["legend"]
            assert not CAMEL_CASE.search(facts["axis"]), facts
        assert re.fullmatch(r"Used memory \((B|KiB|MiB|GiB)\)", legends[0]), legends
        assert legends[1:] == [
            "Operations per second",
            "System CPU (%)",
            "User CPU (%)",
            "Keyspace hit ratio (%)",
        ]
        assert not [text for text in legends if CAMEL_CASE.search(text)]

    async def test_tick_labels_never_repeat(self, wide: Page, service: LiveService):
        await wide.goto(service.url + "/")
        for series in ("usedMemory", "cpuSysPercent,cpuUserPercent", "opsPerSec", "keys,expires"):
            ticks = (await chart_facts(wide, series))["ticks"]
            assert len(set(ticks)) == len(ticks), (series, ticks)

    async def test_the_hit_ratio_stops_at_100_percent(self, wide: Page, service: LiveService):
        await wide.goto(service.url + "/")
        facts = await chart_facts(wide, "hitRatio")
        assert facts["top"] == 1
        assert facts["ticks"][-1] in ("100", "100.0"), facts["ticks"]


class TestCustomRange:
    async def test_a_custom_window_goes_in_the_url_and_survives_a_reload(
        self, wide: Page, service: LiveService
    ):
        await wide.goto(service.url + "/")
        # Yesterday, before this service started: no sample can fall in it.
        start = (datetime.now() - timedelta(days=1)).replace(second=0, microsecond=0)
        end = start + timedelta(hours=2)
        picker = wide.locator("[data-range-custom]").first
        await picker.get_by_label("From").fill(start.strftime("%Y-%m-%dT%H:%M"))
        await picker.get_by_label("To").fill(end.strftime("%Y-%m-%dT%H:%M"))
        from_ms = int(start.timestamp() * 1000)
        async with wide.expect_request(re.compile(rf"/api/metrics/history\?.*from={from_ms}")):
            await picker.get_by_role("button", name="Apply").click()
        await expect(wide).to_have_url(re.compile(r"[?&]from=.+&to=.+"))
        memory = wide.locator('[data-chart][data-series="usedMemory"]')
        await expect(memory.locator(".chart-empty")).to_have_text("No data in this window")

        async with wide.expect_request(re.compile(rf"/api/metrics/history\?.*from={from_ms}")):
            await wide.reload()
        await expect(picker.get_by_label("From")).to_have_value(start.strftime("%Y-%m-%dT%H:%M"))
        await expect(picker.get_by_label("To")).to_have_value(end.strftime("%Y-%m-%dT%H:%M"))
        for preset in await wide.locator("button[data-range]").all():
            await expect(preset).to_have_attribute("aria-pressed", "false")
        await expect(memory.locator(".chart-empty")).to_have_text("No data in this window")

        # A preset takes over again, and the URL says which.
        await wide.get_by_role("button", name="1 hour").click()
        await expect(wide).to_have_url(re.compile(r"\?range=1h$"))
        await expect(memory).to_have_attribute("data-point-count", re.compile(r"^[1-9]"))

    async def test_the_slow_log_lists_a_custom_window_kept_in_the_url(
        self, wide: Page, service: LiveService
    ):
        await wide.goto(service.url + "/slowlog")
        await expect(wide.locator("table.log-entries [data-entry]").first).to_be_visible()
        start = (datetime.now() - timedelta(days=1)).replace(second=0, microsecond=0)
        end = start + timedelta(hours=1)
        filters = wide.get_by_role("search", name="Filter entries")
        await filters.get_by_label("From", exact=True).fill(start.strftime("%Y-%m-%dT%H:%M"))
        await filters.get_by_label("To", exact=True).fill(end.strftime("%Y-%m-%dT%H:%M"))
        await filters.get_by_role("button", name="Apply").click()
        from_ms = int(start.timestamp() * 1000)
        await expect(wide).to_have_url(re.compile(rf"from={from_ms}&to={from_ms + 3_600_000}"))
        await expect(wide.get_by_text("No stored entries match these filters.")).to_be_visible()

        await wide.reload()
        await expect(filters.get_by_label("From", exact=True)).to_have_value(
            start.strftime("%Y-%m-%dT%H:%M")
        )
        await expect(filters.get_by_label("To", exact=True)).to_have_value(
            end.strftime("%Y-%m-%dT%H:%M")
        )
        # A preset window replaces it.
        await filters.get_by_label("Time window").select_option(label="Last hour")
        await filters.get_by_role("button", name="Apply").click()
        await expect(wide).to_have_url(re.compile(r"window=1h"))
        assert not re.search(r"from=\d", wide.url)
        await expect(wide.locator("table.log-entries [data-entry]").first).to_be_visible()

    async def test_the_activity_log_lists_a_custom_window(self, wide: Page, service: LiveService):
        await wide.goto(service.url + "/activity")
        await expect(wide.locator("[data-activity] tr[data-entry]").first).to_be_visible()
        filters = wide.get_by_role("search", name="Filter the activity log")
        start = (datetime.now() - timedelta(days=1)).replace(second=0, microsecond=0)
        await filters.get_by_label("From", exact=True).fill(start.strftime("%Y-%m-%dT%H:%M"))
        await filters.get_by_label("To", exact=True).fill(
            (start + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M")
        )
        await filters.get_by_role("button", name="Apply").click()
        await expect(wide).to_have_url(re.compile(r"from=\d+&to=\d+"))
        await expect(wide.get_by_text("Nothing matches these filters.")).to_be_visible()

        # A window around now holds the claim made at the start of this module.
        now = datetime.now().replace(second=0, microsecond=0)
        await filters.get_by_label("From", exact=True).fill(
            (now - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M")
        )
        await filters.get_by_label("To", exact=True).fill(
            (now + timedelta(minutes=2)).strftime("%Y-%m-%dT%H:%M")
        )
        await filters.get_by_role("button", name="Apply").click()
        await expect(wide.locator("[data-activity] tr[data-entry]").first).to_be_visible()

    async def test_from_after_to_is_refused_with_a_message(self, wide: Page, service: LiveService):
        await wide.goto(service.url + "/memory")
        picker = wide.locator("[data-range-custom]").first
        await picker.get_by_label("From").fill("2026-01-02T10:00")
        await picker.get_by_label("To").fill("2026-01-01T10:00")
        await picker.get_by_role("button", name="Apply").click()
        await expect(picker.get_by_role("status")).to_have_text("From must be before To.")
        assert "from=" not in wide.url


class TestLock:
    async def test_a_locked_feature_shows_a_drawn_padlock_with_a_name(
        self, wide: Page, service: LiveService
    ):
        await wide.goto(service.url + "/anomalies")
        lock = wide.get_by_role("img", name="Locked")
        await expect(lock).to_be_visible()
        assert await lock.evaluate("el => el.tagName.toLowerCase()") == "svg"
        assert "\U0001f512" not in await wide.content()


async def api_operation_count(service: LiveService) -> int:
    async with httpx.AsyncClient(base_url=service.url) as client:
        spec = (await client.get("/api/openapi.json")).json()
    # Swagger UI lists an operation once under each of its tags.
    return sum(
        len(operation.get("tags") or ["default"])
        for operations in spec["paths"].values()
        for operation in operations.values()
    )


class TestAccessibility:
    async def test_no_serious_or_critical_finding_on_any_page(
        self, wide: Page, service: LiveService, pages: list[str], axe: Path
    ):
        found: dict[str, list[str]] = {}
        for path in [*pages, "/webhooks/new"]:
            await wide.goto(service.url + path)
            await settle(wide)
            if path == "/api":
                # Every operation drawn, and one opened: its schema and example too.
                await expect(wide.locator(".opblock")).to_have_count(
                    await api_operation_count(service)
                )
                await wide.locator(".opblock-summary-control").first.click()
                await expect(wide.locator(".opblock-body").first).to_be_visible()
            if problems := await violations(wide, axe):
                found[path] = problems
            # The dark theme has its own colours, so its own contrast to check.
            await wide.emulate_media(color_scheme="dark")
            try:
                if problems := await violations(wide, axe):
                    found[f"{path} (dark)"] = problems
            finally:
                await wide.emulate_media(color_scheme="light")
        assert not found

    async def test_the_check_sees_a_real_problem(self, wide: Page, service: LiveService, axe: Path):
        """So that an empty list above means a clean page, not a check that never ran."""
        await wide.goto(service.url + "/")
        await wide.evaluate(
            "document.querySelector('main').append(Object.assign("
            "document.createElement('img'), { src: '/static/favicon.svg' }))"
        )
        assert [v for v in await violations(wide, axe) if v.startswith("image-alt")]

    async def test_no_serious_or_critical_finding_on_a_phone_with_the_menu_open(
        self, phone: Page, service: LiveService, axe: Path
    ):
        await phone.goto(service.url + "/")
        await settle(phone)
        await phone.get_by_role("button", name="Menu").click()
        assert await violations(phone, axe) == []

    async def test_no_serious_or_critical_finding_in_the_add_connection_dialog(
        self, wide: Page, service: LiveService, axe: Path
    ):
        await wide.goto(service.url + "/")
        await wide.get_by_role("button", name="Add connection").first.click()
        await expect(wide.locator("#connection-dialog")).to_be_visible()
        assert await violations(wide, axe) == []

    async def test_no_serious_or_critical_finding_on_the_sign_in_page(
        self, browser: Browser, service: LiveService, axe: Path
    ):
        context = await browser.new_context(viewport=WIDE, bypass_csp=True)
        try:
            page = await context.new_page()
            await page.goto(service.url + "/login")
            await expect(page.locator('input[name="password"]')).to_be_visible()
            assert await violations(page, axe) == []
        finally:
            await context.close()
