"""The Anomalies page in a real Chromium: Resolve on an event, then on its group, swaps the
panel in place with the rows resolved and their buttons gone; "Show resolved" hides them.

Who may resolve (a member sees no button, a forged POST is refused) is checked over HTTP in
tests/anomaly/test_page_resolve.py. The page fixture fails the test on any console error.
"""

import re
from collections.abc import AsyncIterator

import httpx
import pytest
from playwright.async_api import expect

from svc_monitor.web.shell import CONNECTION_COOKIE
from tests.anomaly.test_api import one_group, push_connection
from tests.fixtures.app import RunningApp, target_of
from tests.fixtures.browser import LiveService, LiveServiceFactory, PageFactory
from tests.fixtures.licensing import SigningKey
from tests.fixtures.servers import RunningServer

pytestmark = pytest.mark.slow


@pytest.fixture
async def service(
    live_service_factory: LiveServiceFactory,
    valkey_server: RunningServer,
    signing_key: SigningKey,
) -> AsyncIterator[LiveService]:
    licence = signing_key.mint(tier="pro")
    async with live_service_factory(
        **target_of(valkey_server), SVC_OFFLINE_LICENSE=licence
    ) as live:
        yield live


async def test_resolve_an_event_then_its_group(
    service: LiveService, open_page: PageFactory, valkey_server: RunningServer
):
    async with httpx.AsyncClient(base_url=service.url) as client:
        running = RunningApp(service.app, client, service.app.state.services.settings)
        connection = await push_connection(running)
        await one_group(running, connection, valkey_server)
    async with open_page(service.url + "/") as page:
        await page.context.add_cookies(
            [{"name": CONNECTION_COOKIE, "value": connection, "url": service.url}]
        )
        await page.goto(service.url + "/anomalies")
        group = page.locator("tr[data-group]")
        await expect(group).to_have_count(1)
        await expect(group.locator('[data-field="state"]')).to_have_text("open")
        events = page.locator("tr[data-event]")
        count = await events.count()
        assert count >= 2  # memory up and clients down, in one group

        # One event first: it alone turns resolved; the group stays open.
        first = events.first
        event_id = await first.get_attribute("data-event")
        await first.locator('[data-action="resolve-event"]').click()
        await expect(page.locator('[data-state="done"]')).to_have_text(
            f"Event {event_id} resolved."
        )
        first = page.locator(f'tr[data-event="{event_id}"]')
        await expect(first.locator('[data-field="state"]')).to_have_text(
            re.compile(r"^resolved \S")  # with when
        )
        await expect(first.locator('[data-field="state"] time')).to_have_count(1)
        await expect(first.locator("button")).to_have_count(0)
        await expect(page.locator('[data-action="resolve-event"]')).to_have_count(count - 1)
        await expect(group.locator('[data-field="state"]')).to_have_text("open")

        # Then the group: it and all its events are resolved, no Resolve button is left.
        group_id = await group.get_attribute("data-group")
        await group.locator('[data-action="resolve-group"]').click()
        await expect(page.locator('[data-state="done"]')).to_have_text(
            f"Group {group_id} resolved, with its events."
        )
        state = group.locator('[data-field="state"]')
        await expect(state).to_have_attribute("data-state", "resolved")
        await expect(state.locator("time")).to_have_count(1)
        await expect(page.locator('#anomaly-panel [data-state="resolved"]')).to_have_count(
            1 + count
        )
        await expect(page.locator("#anomaly-panel button")).to_have_count(0)

        # Untick "Show resolved": only open anomalies are listed, and there are none.
        await page.locator('[data-action="show-resolved"]').uncheck()
        await expect(page.locator("tr[data-group]")).to_have_count(0)
        await expect(
            page.locator('[data-section="anomaly-groups"] [data-state="empty"]')
        ).to_have_text("No open anomalies on this connection.")
        await expect(page).to_have_url(service.url + "/anomalies?resolved=hide")
        await page.reload()  # the filter is in the address: it stays on a reload
        await expect(page.locator('[data-action="show-resolved"]')).not_to_be_checked()
        await expect(page.locator("tr[data-event]")).to_have_count(0)
