"""The Clients, Latency and Memory pages in a real Chromium against a live service.

The page fixture fails the test on any console error (a CSP violation is one) and on
any request to a host other than this machine.
"""

import re
from collections.abc import AsyncIterator, Iterator

import pytest
import valkey
from playwright.async_api import expect

from tests.fixtures.app import target_of
from tests.fixtures.browser import LiveService, LiveServiceFactory, PageFactory
from tests.fixtures.servers import RunningServer, ServerFactory

pytestmark = pytest.mark.slow

CLIENT_NAME = "ui-e2e-worker"
KEYS = 23


@pytest.fixture
def server(server_factory: ServerFactory) -> Iterator[RunningServer]:
    started = server_factory.start("valkey", config={"enable-debug-command": "yes"})
    yield started
    server_factory.stop(started)


@pytest.fixture
def worker(server: RunningServer) -> Iterator[valkey.Valkey]:
    """A named application connection that wrote some keys and caused a latency spike."""
    with server.client() as conn:
        conn.client_setname(CLIENT_NAME)
        conn.mset({f"e2e:{n}": n for n in range(KEYS)})
        conn.config_set("latency-monitor-threshold", "1")
        conn.execute_command("DEBUG", "SLEEP", "0.05")
        yield conn


@pytest.fixture
async def service(
    live_service_factory: LiveServiceFactory, server: RunningServer
) -> AsyncIterator[LiveService]:
    async with live_service_factory(**target_of(server), HISTORY_SAMPLE_INTERVAL_MS=200) as live:
        yield live


async def test_clients_latency_and_memory_show_live_values(
    service: LiveService, open_page: PageFactory, worker: valkey.Valkey
):
    async with open_page(service.url + "/clients") as page:
        row = page.locator(f'tr[data-client-name="{CLIENT_NAME}"]')
        await expect(row.locator('[data-field="cmd"]')).to_have_text("debug")  # its last command
        # Sorting swaps the table in place (htmx) and keeps the address shareable.
        await page.locator('a[data-sort="name"]').click()
        await expect(page).to_have_url(re.compile(r"/clients\?sort=name&order=asc"))
        await expect(page.locator('th[aria-sort="ascending"] a[data-sort="name"]')).to_be_visible()

        await page.goto(service.url + "/latency")
        await expect(
            page.locator('tr[data-event="command"] [data-field="latest"]')
        ).to_contain_text("ms")
        history = page.locator('[data-chart][data-source="/api/metrics/latency/history/command"]')
        await expect(history).to_have_attribute("data-point-count", re.compile(r"^[1-9]"))
        await expect(history.locator("canvas")).to_have_count(1)

        await page.goto(service.url + "/memory")
        keys = page.locator('[data-metric="keys.count"] .card-value')
        await expect(keys).to_have_text(str(KEYS))
        used = page.locator('[data-section="memory-snapshots"] [data-chart]').first
        await expect(used).to_have_attribute("data-point-count", re.compile(r"^[1-9]"))
