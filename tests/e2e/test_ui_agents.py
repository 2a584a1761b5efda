"""The Agents page in a real Chromium: an admin adds an agent connection (its token shown
once, with the command that starts the agent), the real agent links and the row shows it
up with its instance and round trip; revoking closes the link (docs/features/agent.md).

The page fixture fails each test on any console error and any request off this machine.
"""

from pathlib import Path

import httpx
import pytest
from playwright.async_api import expect

from tests.agent.agent_process import AgentProcess
from tests.fixtures.app import target_of
from tests.fixtures.browser import LiveServiceFactory, PageFactory
from tests.fixtures.servers import ServerFactory

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]


async def test_add_an_agent_connection_see_it_link_and_revoke_it(
    live_service_factory: LiveServiceFactory,
    open_page: PageFactory,
    server_factory: ServerFactory,
    tmp_path: Path,
):
    default, hidden = server_factory.start("valkey"), server_factory.start("redis7")
    async with (
        live_service_factory(**target_of(default)) as service,
        open_page(service.url + "/agents") as page,
    ):
        await page.get_by_label("Name").fill("behind-the-vpn")
        await page.get_by_role("button", name="Add an agent connection").click()
        secret = page.locator("[data-agent-secret]")
        await expect(secret).to_contain_text("svc_agent_")
        await expect(page.locator("[data-agent-command]")).to_contain_text(service.url)
        token = (await secret.text_content() or "").strip()
        row = page.locator("tr[data-agent]")
        await expect(row.locator('[data-field="link"]')).to_have_text("down")

        agent = AgentProcess(
            {
                "SVC_URL": service.url,
                "SVC_AGENT_ALLOW_HTTP": "true",
                "SVC_AGENT_TOKEN": token,
                "DB_HOST": hidden.host,
                "DB_PORT": str(hidden.port),
            },
            tmp_path,
        ).start()
        try:
            async with httpx.AsyncClient(base_url=service.url) as client:
                for _ in range(200):  # bounded: 20 s
                    agents = (await client.get("/api/agents")).json()
                    if agents and agents[0]["rttMs"] is not None:
                        break
                    await page.wait_for_timeout(100)
            await page.reload()
            row = page.locator("tr[data-agent]")
            await expect(row).to_have_attribute("data-linked", "yes")
            await expect(row).to_contain_text("redis 7.0")
            await expect(row.locator('[data-field="rtt"]')).to_contain_text("ms")
            # A fresh page never shows the token again.
            await expect(page.locator("[data-agent-secret]")).to_have_count(0)

            await row.get_by_role("button", name="Revoke").click()
            await expect(page.locator("tr[data-agent]")).to_have_attribute(
                "data-linked", "no", timeout=5_000
            )
            await expect(page.locator('tr[data-agent] [data-field="link"]')).to_have_text("revoked")
        finally:
            agent.stop()
