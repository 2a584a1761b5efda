"""The Cluster, ACL audit and Settings pages in a real Chromium, against live servers.

Every page opened here fails its test on a console error (a CSP refusal included) or a
request to a host other than this machine (tests/fixtures/browser.py).
"""

from collections.abc import AsyncIterator

import httpx
import pytest
from playwright.async_api import expect

from tests.fixtures.app import target_of
from tests.fixtures.browser import LiveService, LiveServiceFactory, PageFactory
from tests.fixtures.servers import RunningServer, ServerFactory

pytestmark = pytest.mark.slow


@pytest.fixture
async def service(
    live_service_factory: LiveServiceFactory, valkey_server: RunningServer
) -> AsyncIterator[LiveService]:
    async with live_service_factory(**target_of(valkey_server)) as running:
        yield running


async def audit_interval(service: LiveService) -> int:
    async with httpx.AsyncClient(base_url=service.url) as client:
        body = (await client.get("/api/settings")).json()
    return int(body["settings"]["auditPollIntervalMs"])


class TestSettingsAndAudit:
    async def test_the_settings_form_saves_and_resets_through_the_browser(
        self, service: LiveService, open_page: PageFactory
    ):
        default = await audit_interval(service)
        wanted = default + 4321
        async with open_page(service.url + "/settings") as page:
            field = page.get_by_label("Audit poll interval")
            await field.fill(str(wanted))
            await page.get_by_role("button", name="Save").click()
            await expect(page.locator('[data-state="saved"]')).to_be_visible()
            assert await audit_interval(service) == wanted
            row = page.locator('[data-setting="auditPollIntervalMs"]')
            await expect(row.locator('[data-source="database"]')).to_be_visible()

            await field.fill("-3")
            await page.get_by_role("button", name="Save").click()
            await expect(page.locator('[data-field-error="auditPollIntervalMs"]')).to_be_visible()
            assert await audit_interval(service) == wanted

            # hx-confirm's dialog is accepted by the fixture, as a user clicking OK.
            await page.get_by_role("button", name="Reset to defaults").click()
            await expect(page.get_by_label("Audit poll interval")).to_have_value(str(default))
            assert await audit_interval(service) == default

            await page.goto(service.url + "/audit")
            await expect(page.locator('[data-section="entries"]')).to_be_visible()


class TestCluster:
    async def test_the_cluster_page_shows_its_node_and_slot_heatmap(
        self,
        live_service_factory: LiveServiceFactory,
        open_page: PageFactory,
        server_factory: ServerFactory,
    ):
        [node] = server_factory.cluster("valkey", masters=1)
        try:
            async with (
                live_service_factory(**target_of(node)) as service,
                open_page(service.url + "/cluster") as page,
            ):
                address = f"{node.host}:{node.port}"
                row = page.locator(f'.cluster-nodes tr[data-address="{address}"]')
                await expect(row.locator('[data-field="role"]')).to_have_text("primary")
                await expect(
                    page.locator('[data-metric="cluster_state"] .card-value')
                ).to_have_text("ok")
                # All 16384 slots are read and parsed for it: on a loaded CI machine that,
                # after a first answer of "not yet" and its 2 s retry, took over 5 s.
                await expect(page.locator(".heatmap > span")).to_have_count(256, timeout=15_000)
                await page.get_by_role("link", name="CPU time").click()
                await expect(page.locator('[data-state="untracked"]')).to_be_visible()
                await expect(page.locator('[data-metric-tab="cpu"]')).to_have_attribute(
                    "aria-current", "page"
                )
        finally:
            server_factory.stop(node)
