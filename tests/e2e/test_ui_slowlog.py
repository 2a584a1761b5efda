"""The slow log page in a real Chromium, against a live service watching real Valkey and Redis.

Every page opened here also fails its test on a console error or a request to a host
other than this machine (tests/fixtures/browser.py).
"""

import random

import pytest
from playwright.async_api import expect

from tests.fixtures.app import target_of
from tests.fixtures.browser import LiveServiceFactory, PageFactory
from tests.fixtures.servers import RunningServer, ServerFactory

pytestmark = pytest.mark.slow

REQUIREMENT = "COMMANDLOG needs Valkey 8.1 or newer"


async def test_a_slow_command_appears_on_the_open_page(
    live_service_factory: LiveServiceFactory,
    open_page: PageFactory,
    server_factory: ServerFactory,
):
    valkey = server_factory.start("valkey", config={"slowlog-log-slower-than": "0"})
    tag = "".join(random.choices("ghijklmnopqrstuvwxyz", k=12))
    try:
        settings = {"SLOWLOG_POLL_INTERVAL_MS": 200, **target_of(valkey)}
        async with (
            live_service_factory(**settings) as service,
            open_page(service.url + "/slowlog") as page,
        ):
            await expect(page.get_by_role("link", name="Slow commands")).to_have_attribute(
                "aria-current", "page"
            )
            # Run after the page is open: the page itself must bring the entry in.
            with valkey.client() as conn:
                conn.set(f"{tag}:1", "slow-value")
            row = page.locator("tr[data-entry]", has_text=f"SET {tag}:1 slow-value")
            await expect(row).to_be_visible(timeout=10_000)
            await expect(row.locator("time")).not_to_have_text("")
            await expect(page.locator(f'[data-pattern="SET {tag}:*"]')).to_be_visible()
    finally:
        server_factory.stop(valkey)


async def test_redis_shows_the_commandlog_requirement(
    live_service_factory: LiveServiceFactory,
    open_page: PageFactory,
    redis7_server: RunningServer,
):
    async with (
        live_service_factory(**target_of(redis7_server)) as service,
        open_page(service.url + "/slowlog") as page,
    ):
        await page.get_by_role("link", name="Large requests").click()
        await expect(page.get_by_role("link", name="Large requests")).to_have_attribute(
            "aria-current", "page"
        )
        await expect(page.locator('[data-problem="unsupported"]')).to_contain_text(
            REQUIREMENT, timeout=10_000
        )
