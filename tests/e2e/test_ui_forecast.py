"""The Forecast page in a real Chromium: the charts draw (uPlot, under the page's CSP),
and saving a card's settings swaps the card and draws its chart again.

The page fixture fails the test on any console error (a CSP violation is one).
"""

from collections.abc import AsyncIterator

import httpx
import pytest
from playwright.async_api import expect

from svc_monitor.web.shell import CONNECTION_COOKIE
from tests.fixtures.app import RunningApp, target_of
from tests.fixtures.browser import LiveService, LiveServiceFactory, PageFactory
from tests.fixtures.servers import RunningServer
from tests.forecast.history import MB, push_connection, record, steady_memory

pytestmark = pytest.mark.slow


@pytest.fixture
async def service(
    live_service_factory: LiveServiceFactory, valkey_server: RunningServer
) -> AsyncIterator[LiveService]:
    async with live_service_factory(**target_of(valkey_server)) as live:
        yield live


async def test_charts_draw_and_settings_save(service: LiveService, open_page: PageFactory):
    async with httpx.AsyncClient(base_url=service.url) as client:
        running = RunningApp(service.app, client, service.app.state.services.settings)
        connection = await push_connection(running)
        await record(
            running,
            connection,
            samples=121,
            fields=steady_memory(100 * MB, MB, maxmemory=512 * MB),
        )
    async with open_page(service.url + "/login") as page:
        await page.context.add_cookies(
            [{"name": CONNECTION_COOKIE, "value": connection, "url": service.url}]
        )
        await page.goto(service.url + "/forecasting")
        memory = page.locator('[data-forecast="usedMemory"]')
        await expect(memory.locator('[data-field="headline"] .card-value')).to_have_text(
            "~4.9h at current growth rate"
        )
        await expect(memory.locator("[data-forecast-chart] canvas")).to_have_count(1)
        await expect(memory.locator("[data-forecast-chart]")).to_have_attribute(
            "data-point-count", "121"
        )
        await memory.locator("summary").click()
        await memory.locator('input[name="ceiling"]').fill(str(400 * MB))
        await memory.locator('[data-action="save-forecast-settings"]').click()
        memory = page.locator('[data-forecast="usedMemory"]')
        await expect(memory.locator('[data-state="saved"]')).to_be_visible()
        await expect(memory.locator('[data-field="headline"] .card-value')).to_have_text(
            "~3.0h at current growth rate"
        )
        await expect(memory.locator("[data-forecast-chart] canvas")).to_have_count(1)
