"""The UI in a real Chromium against a live service watching real Valkey and Redis.

Every page opened here also fails its test on a console error or a request to a
host other than this machine (tests/fixtures/browser.py).
"""

import re
from collections.abc import AsyncIterator
from typing import Any, cast

import pytest
from playwright.async_api import Page, expect

from tests.fixtures.app import target_of
from tests.fixtures.browser import PHONE, LiveService, LiveServiceFactory, PageFactory
from tests.fixtures.servers import RunningServer, ServerFactory

pytestmark = pytest.mark.slow


@pytest.fixture
async def service(
    live_service_factory: LiveServiceFactory, valkey_server: RunningServer
) -> AsyncIterator[LiveService]:
    async with live_service_factory(**target_of(valkey_server)) as running:
        yield running


async def add_connection(page: Page, quick: str, *, password: str | None = None) -> None:
    await page.get_by_role("button", name="Add connection").first.click()
    dialog = page.locator("#connection-dialog")
    await expect(dialog).to_be_visible()
    await dialog.get_by_label("Quick connect").fill(quick)
    await dialog.get_by_label("Quick connect").press("Tab")  # the change event fills the fields
    if password is not None:
        await dialog.get_by_label("Password", exact=True).fill(password)


class TestAddConnection:
    async def test_adding_a_redis_switches_every_page_to_it(
        self, service: LiveService, open_page: PageFactory, redis7_server: RunningServer
    ):
        redis = redis7_server.client()
        redis.flushall()
        redis.mset({f"ui:key:{i}": i for i in range(37)})
        redis.config_set("maxmemory", str(123 * 1024 * 1024))
        try:
            async with open_page(service.url) as page:
                await add_connection(page, f"redis://{redis7_server.host}:{redis7_server.port}")
                dialog = page.locator("#connection-dialog")
                await expect(dialog.get_by_label("Host", exact=True)).to_have_value(
                    redis7_server.host
                )
                await expect(dialog.get_by_label("Port", exact=True)).to_have_value(
                    str(redis7_server.port)
                )

                await dialog.get_by_role("button", name="Test").click()
                version = str(cast(dict[str, Any], redis.info("server"))["redis_version"])
                await expect(dialog.locator("[data-detected]")).to_have_text(f"redis {version}")

                await dialog.get_by_label("Name", exact=True).fill("Redis under test")
                await dialog.get_by_role("button", name="Save").click()
                await page.wait_for_load_state("load")
                switcher = page.locator("#connection-select option:checked")
                await expect(switcher).to_contain_text("Redis under test")

                # The dashboard is now Redis's: its values are INFO's, once the new
                # connection's first poll (detection, then INFO) has answered.
                await expect(page.locator('[data-metric="version"] .card-value')).to_have_text(
                    version, timeout=15_000
                )
                await expect(page.locator('[data-metric="maxmemory"] .card-value')).to_have_text(
                    "123.0 MiB"
                )
                await expect(page.locator('[data-db="db0"] [data-field="keys"]')).to_have_text("37")
                role = str(cast(dict[str, Any], redis.info("replication"))["role"])
                await expect(page.locator('[data-metric="role"] .card-value')).to_have_text(role)

                # Another page keeps the choice.
                await page.goto(service.url + "/")
                await expect(page.locator("#connection-select option:checked")).to_contain_text(
                    "Redis under test"
                )
        finally:
            redis.config_set("maxmemory", "0")
            redis.flushall()

    async def test_a_wrong_password_shows_the_engines_own_error(
        self, service: LiveService, open_page: PageFactory, server_factory: ServerFactory
    ):
        locked = server_factory.start("valkey", password="right-password")
        try:
            async with open_page(service.url) as page:
                await add_connection(
                    page, f"{locked.host}:{locked.port}", password="wrong-password"
                )
                dialog = page.locator("#connection-dialog")
                await dialog.get_by_role("button", name="Test").click()
                error = dialog.locator("[data-engine-error]")
                await expect(error).to_contain_text("WRONGPASS")
                await expect(dialog.locator("[data-result]")).not_to_contain_text("wrong-password")
        finally:
            server_factory.stop(locked)

    async def test_a_refused_port_says_so(
        self, service: LiveService, open_page: PageFactory, server_factory: ServerFactory
    ):
        gone = server_factory.start("valkey")
        server_factory.stop(gone)
        async with open_page(service.url) as page:
            await add_connection(page, f"{gone.host}:{gone.port}")
            dialog = page.locator("#connection-dialog")
            await dialog.get_by_role("button", name="Test").click()
            await expect(dialog.locator("[data-result]")).to_have_attribute(
                "data-error-kind", "unreachable"
            )


class TestDashboard:
    async def test_charts_draw_the_stored_history(
        self, service: LiveService, open_page: PageFactory
    ):
        async with open_page(service.url) as page:
            memory = page.locator('[data-chart][data-series="usedMemory"]')
            await expect(memory).to_have_attribute("data-point-count", re.compile(r"^[1-9]\d*$"))
            await expect(memory.locator("canvas")).to_have_count(1)

    async def test_the_range_picker_redraws_for_another_window(
        self, service: LiveService, open_page: PageFactory
    ):
        async with open_page(service.url) as page:
            week = page.get_by_role("button", name="7 days")
            async with page.expect_request(re.compile(r"/api/metrics/history\?")) as request:
                await week.click()
            sent = (await request.value).url
            assert "from=" in sent
            assert "to=" in sent
            await expect(week).to_have_attribute("aria-pressed", "true")

    async def test_fits_a_phone_screen(self, service: LiveService, open_page: PageFactory):
        async with open_page(service.url, viewport=PHONE) as page:
            await expect(page.locator('[data-metric="used_memory"]')).to_be_visible()
            overflow = await page.evaluate(
                "document.scrollingElement.scrollWidth - window.innerWidth"
            )
            assert overflow <= 0

    async def test_follows_the_browsers_dark_theme(
        self, service: LiveService, open_page: PageFactory
    ):
        backgrounds = []
        for scheme in ("light", "dark"):
            async with open_page(service.url, color_scheme=scheme) as page:
                backgrounds.append(
                    await page.evaluate("getComputedStyle(document.body).backgroundColor")
                )
        assert backgrounds[0] != backgrounds[1]
