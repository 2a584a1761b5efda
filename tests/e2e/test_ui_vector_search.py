"""The Vector search page in a real Chromium against a real RediSearch: each index's history
charts drawn from the stored snapshots, and the search and profile forms answering from the
server (docs/features/vector-search.md#the-page).

The page fixture fails each test on any console error and any request off this machine.
"""

import httpx
import pytest
from playwright.async_api import expect

from tests.fixtures.app import target_of
from tests.fixtures.browser import LiveServiceFactory, PageFactory
from tests.fixtures.search_module import emptied
from tests.fixtures.servers import RunningServer
from tests.fixtures.waiting import eventually
from tests.vector_search.test_indexes import add_documents, create_index

pytestmark = pytest.mark.slow


async def test_charts_and_forms_answer_from_the_server(
    live_service_factory: LiveServiceFactory,
    open_page: PageFactory,
    search_server: RunningServer,
):
    emptied(search_server)
    create_index(search_server, "ui_idx", "ui:")
    add_documents(search_server, "ui:", 300)
    async with live_service_factory(
        **target_of(search_server), VECTOR_INDEX_POLL_INTERVAL_MS=300
    ) as service:

        async def stored() -> bool:
            async with httpx.AsyncClient(base_url=service.url) as client:
                rows = (await client.get("/api/vector-search/snapshots?index=ui_idx")).json()
            return isinstance(rows, list) and len(rows) >= 2

        await eventually(stored, within=20)
        async with open_page(service.url + "/vector-search") as page:
            docs_chart = page.locator("figure[data-chart]", has_text="ui_idx: documents")
            await expect(docs_chart).not_to_have_attribute("data-point-count", "0", timeout=10_000)

            search = page.locator('form[data-form="vector-search"]')
            await search.locator('input[name="query"]').fill("@title:document")
            await search.get_by_role("button", name="Search").click()
            result = page.locator('[data-section="vector-search-result"]')
            await expect(result.locator('[data-field="summary"]')).to_contain_text(
                "300 matched, 10 shown", timeout=10_000
            )

            await search.locator('select[name="mode"]').select_option("similar")
            await search.locator('input[name="sourceKey"]').fill("ui:7")
            await search.locator('input[name="k"]').fill("3")
            await search.get_by_role("button", name="Search").click()
            # The key's own document is nearest to its own vector.
            await expect(result.locator("tr[data-hit]").first).to_have_attribute(
                "data-hit", "ui:7", timeout=10_000
            )
            await expect(result.locator("tr[data-hit]")).to_have_count(3)

            await search.locator('input[name="sourceKey"]').fill("ui:missing")
            await search.get_by_role("button", name="Search").click()
            await expect(result.locator('[data-state="invalid"]')).to_contain_text(
                "ui:missing", timeout=10_000
            )

            profile = page.locator('form[data-form="vector-profile"]')
            await profile.locator('input[name="query"]').fill("@title:document")
            await profile.get_by_role("button", name="Profile").click()
            await expect(page.locator('[data-field="profile"]')).to_contain_text(
                "Iterators profile", timeout=10_000
            )
