"""Settings, License in a real Chromium: locked features, upload, paste, refusal, removal."""

import time
from pathlib import Path

import httpx
import pytest
from playwright.async_api import expect

from tests.fixtures.app import target_of
from tests.fixtures.browser import LiveServiceFactory, PageFactory
from tests.fixtures.licensing import SigningKey
from tests.fixtures.servers import RunningServer

pytestmark = pytest.mark.slow


async def tier_of(url: str) -> str:
    async with httpx.AsyncClient(base_url=url) as client:
        tier: str = (await client.get("/api/license/status")).json()["tier"]
    return tier


class TestLicenseSection:
    async def test_upload_then_refused_paste_then_removal(
        self,
        live_service_factory: LiveServiceFactory,
        valkey_server: RunningServer,
        open_page: PageFactory,
        signing_key: SigningKey,
        tmp_path: Path,
    ):
        licence_file = tmp_path / "license-offline.jwt"
        licence_file.write_text(signing_key.mint(tier="pro", instanceLimit=7) + "\n")
        expired = signing_key.mint(tier="enterprise", exp=int(time.time()) - 5 * 86400)
        async with (
            live_service_factory(**target_of(valkey_server)) as service,
            open_page(service.url + "/settings") as page,
        ):
            panel = page.locator("#license")
            await expect(panel).to_have_attribute("data-tier", "community")
            anomaly = panel.locator('tr[data-feature="anomalyDetection"]')
            await expect(anomaly).to_have_attribute("data-locked", "true")
            await expect(anomaly).to_contain_text("locked")
            await expect(anomaly).to_contain_text("Pro")

            await page.set_input_files("#license-file", str(licence_file))
            await page.click('[data-action="activate-license"]')
            await expect(panel).to_have_attribute("data-tier", "pro")
            await expect(panel.locator('[data-state="done"]')).to_contain_text("Pro")
            await expect(panel.locator('[data-metric="license-instances"]')).to_contain_text("7")
            await expect(anomaly).to_have_attribute("data-locked", "false")
            compliance = panel.locator('tr[data-feature="webhookComplianceEvents"]')
            await expect(compliance).to_have_attribute("data-locked", "true")

            await page.fill("#license-token", expired)
            await page.click('[data-action="activate-license"]')
            await expect(panel.locator('[data-state="refused"]')).to_contain_text("expired")
            await expect(panel).to_have_attribute("data-tier", "pro")
            assert await tier_of(service.url) == "pro"

            await page.click('[data-action="remove-license"]')
            await expect(panel).to_have_attribute("data-tier", "community")
            assert await tier_of(service.url) == "community"

    async def test_paste_on_a_phone(
        self,
        live_service_factory: LiveServiceFactory,
        valkey_server: RunningServer,
        open_page: PageFactory,
        signing_key: SigningKey,
    ):
        from tests.fixtures.browser import PHONE

        async with (
            live_service_factory(**target_of(valkey_server)) as service,
            open_page(service.url + "/settings", viewport=PHONE) as page,
        ):
            await page.fill("#license-token", signing_key.mint(tier="enterprise"))
            await page.click('[data-action="activate-license"]')
            panel = page.locator("#license")
            await expect(panel).to_have_attribute("data-tier", "enterprise")
            await expect(panel.locator('[data-metric="license-source"]')).to_contain_text(
                "air-gapped"
            )
            width = await page.evaluate("document.documentElement.scrollWidth")
        assert width <= PHONE["width"]
