"""The MONITOR page in a real Chromium against a live service watching a real Valkey.

People sign in through the API (httpx against the served URL) and the session cookie is
put into the browser, as the sign-in page would leave it. Every page also fails its test
on a console error or a request to a host other than this machine.
"""

import json
import secrets
from pathlib import Path

import pytest
from playwright.async_api import expect

from tests.fixtures.app import target_of
from tests.fixtures.browser import LiveServiceFactory, PageFactory
from tests.fixtures.served_team import ServedTeam
from tests.fixtures.servers import RunningServer

pytestmark = pytest.mark.slow


async def test_an_admin_captures_sees_a_line_live_and_exports_it(
    live_service_factory: LiveServiceFactory,
    open_page: PageFactory,
    valkey_server: RunningServer,
    tmp_path: Path,
):
    key = f"monitor-e2e:{secrets.token_hex(4)}"
    settings = {**target_of(valkey_server), "WORKSPACE_DISABLED": False}
    async with live_service_factory(**settings) as service:
        team = ServedTeam(service.app, service.url)
        try:
            await team.claim()
            admin = await team.join("Ada", role="admin")
            async with open_page("about:blank") as page:
                await team.sign_in_page(page, admin)
                await page.goto(service.url + "/monitor")
                preflight = page.locator("[data-preflight]")
                await expect(preflight).to_have_attribute("data-allowed", "yes")
                await page.get_by_label("Duration").select_option("10000")
                await page.get_by_role("button", name="Start capture").click()
                await expect(page).to_have_url(f"{service.url}/monitor/1")
                status = page.locator("[data-tail-status]")
                await expect(status).to_have_text("Live.")

                with valkey_server.client() as conn:
                    conn.set(key, "seen in the browser")
                row = page.locator("tr[data-tail-line]", has_text=key)
                await expect(row).to_contain_text("SET monitor-e2e:")
                await expect(row).to_contain_text('"seen in the browser"')

                # The filter hides what does not match, and brings it back.
                await page.get_by_label("Filter by command").fill("get")
                await expect(row).to_be_hidden()
                await page.get_by_label("Filter by command").fill("SE")
                await expect(row).to_be_visible()

                await page.get_by_role("button", name="Stop now").click()
                await expect(page.locator('#monitor-facts [data-field="status"]')).to_have_text(
                    "stopped"
                )
                await expect(status).to_contain_text("stopped by Ada")

                async with page.expect_download() as download_info:
                    await page.get_by_role("link", name="Export JSON").click()
                download = await download_info.value
                assert download.suggested_filename == "monitor-1-env-default.json"
                saved = tmp_path / download.suggested_filename
                await download.save_as(saved)
                exported = json.loads(saved.read_text())
                assert exported["session"]["status"] == "stopped"
                assert [key, "seen in the browser"] in [x["args"] for x in exported["lines"]]
        finally:
            await team.aclose()
            with valkey_server.client() as conn:
                conn.delete(key)


async def test_a_member_follows_but_cannot_start(
    live_service_factory: LiveServiceFactory,
    open_page: PageFactory,
    valkey_server: RunningServer,
):
    settings = {**target_of(valkey_server), "WORKSPACE_DISABLED": False}
    async with live_service_factory(**settings) as service:
        team = ServedTeam(service.app, service.url)
        try:
            owner = await team.claim()
            member = await team.join("Mia")
            started = await owner.client.post("/api/monitor/sessions", json={"durationMs": 5000})
            assert started.status_code == 201
            async with open_page("about:blank") as page:
                await team.sign_in_page(page, member)
                await page.goto(service.url + "/monitor")
                await expect(page.locator('[data-state="admins-only"]')).to_be_visible()
                await expect(page.get_by_role("button", name="Start capture")).to_have_count(0)
                await page.get_by_role("link", name="Follow live").click()
                await expect(page.locator("[data-tail-status]")).to_have_text("Live.")
                await expect(page.get_by_role("button", name="Stop now")).to_have_count(0)
                await page.get_by_role("button", name="Pause").click()
                await expect(page.locator("[data-tail-status]")).to_contain_text("Paused")
                await page.get_by_role("button", name="Resume").click()
                await expect(page.locator("[data-tail-status]")).to_contain_text(
                    "The capture has ended", timeout=15_000
                )
                await expect(page.locator('#monitor-facts [data-field="status"]')).to_have_text(
                    "completed"
                )
        finally:
            await team.aclose()
