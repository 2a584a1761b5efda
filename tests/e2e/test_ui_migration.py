"""The Migration page in a real Chromium: a push connection disabled in the picker with
its own message, then the four steps on real servers, each job's progress and report
(docs/features/migration.md).

The page fixture fails each test on any console error and any request off this machine.
"""

import httpx
import pytest
from playwright.async_api import expect

from tests.fixtures.app import target_of
from tests.fixtures.browser import LiveServiceFactory, PageFactory
from tests.fixtures.licensing import SigningKey
from tests.fixtures.servers import ServerFactory
from tests.migration.keyspace import load

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


async def test_analyse_migrate_and_verify_from_the_page(
    live_service_factory: LiveServiceFactory,
    open_page: PageFactory,
    server_factory: ServerFactory,
    signing_key: SigningKey,
):
    source, target = server_factory.start("redis7"), server_factory.start("valkey")
    load(source, 100)  # 1,200 keys in 2 databases
    pro = signing_key.mint(tier="pro")
    async with live_service_factory(**target_of(source), SVC_OFFLINE_LICENSE=pro) as service:
        async with httpx.AsyncClient(base_url=service.url) as client:
            made = await client.post(
                "/api/connections",
                json={"name": "valkey-9", "host": target.host, "port": target.port},
            )
            assert made.status_code in (200, 201), made.text
            pushed = await client.post(
                "/api/connections",
                json={"source": "push", "name": "edge", "host": "10.9.9.9", "port": 6392},
            )
            assert pushed.status_code in (200, 201), pushed.text
        async with open_page(service.url + "/migration") as page:
            form = page.locator('form[data-form="migration"]')
            edge = form.locator('select[name="source"] option[data-push]')
            await expect(edge).to_be_disabled()
            await expect(edge).to_contain_text("a push connection cannot be migrated")
            await form.locator('select[name="target"]').select_option(made.json()["id"])

            job = page.locator("#migration-job")
            await form.get_by_role("button", name="Analyse").click()
            await expect(job).to_have_attribute("data-status", "completed", timeout=60_000)
            verdict = job.locator('[data-metric="verdict"] .card-value')
            await expect(verdict).to_have_text("ready")
            await expect(job.locator('tr[data-finding="functions_copied"]')).to_have_count(1)

            await form.get_by_role("button", name="Migrate").click()
            await expect(job).to_have_attribute("data-kind", "execution", timeout=10_000)
            await expect(job).to_have_attribute("data-status", "completed", timeout=120_000)
            copied = job.locator('[data-metric="copied"] .card-value')
            await expect(copied).to_have_text("1,200")

            await form.get_by_role("button", name="Verify").click()
            await expect(job).to_have_attribute("data-kind", "validation", timeout=10_000)
            await expect(job).to_have_attribute("data-status", "completed", timeout=120_000)
            differences = job.locator('[data-metric="differences"] .card-value')
            await expect(differences).to_have_text("0")
            await expect(job.locator('[data-section="migration-counts"] tr')).to_have_count(13)

            await page.reload()
            await expect(
                page.locator('[data-section="migration-recent"] tr[data-job]')
            ).to_have_count(3)
