"""The CLI page in a real Chromium against a live service watching a real Valkey.

The member signs in through the API (httpx against the served URL) and the session
cookie is put into the browser, as the sign-in page would leave it. Every page also fails
its test on a console error or a request to a host other than this machine.
"""

import secrets
from collections.abc import Iterator

import pytest
from playwright.async_api import Page, expect

from tests.fixtures.app import target_of
from tests.fixtures.browser import LiveServiceFactory, PageFactory
from tests.fixtures.served_team import ServedTeam
from tests.fixtures.servers import RunningServer

pytestmark = pytest.mark.slow


@pytest.fixture
def key(valkey_server: RunningServer) -> Iterator[str]:
    name = f"cli-e2e:{secrets.token_hex(4)}"
    yield name
    with valkey_server.client() as conn:
        conn.delete(name)


async def run(page: Page, command: str) -> None:
    """Type a command at the prompt and press Enter."""
    prompt = page.get_by_role("textbox", name="127.0.0.1")
    await prompt.fill(command)
    await prompt.press("Enter")


async def test_a_member_reads_a_value_and_is_refused_a_write(
    live_service_factory: LiveServiceFactory,
    open_page: PageFactory,
    valkey_server: RunningServer,
    key: str,
):
    with valkey_server.client() as conn:
        conn.set(key, "hello from valkey")
    settings = {**target_of(valkey_server), "WORKSPACE_DISABLED": False, "SVC_UNSAFE_CLI": True}
    async with live_service_factory(**settings) as service:
        team = ServedTeam(service.app, service.url)
        try:
            await team.claim()
            member = await team.join("Mia")
            async with open_page("about:blank") as page:
                await team.sign_in_page(page, member)
                await page.goto(service.url + "/cli")
                await expect(page.get_by_role("link", name="CLI", exact=True)).to_have_attribute(
                    "aria-current", "page"
                )
                await expect(page.locator("[data-cli-mode]")).to_contain_text(
                    "The CLI is read-only for members"
                )
                log = page.get_by_role("log")
                await run(page, f"GET {key}")
                await expect(log.locator('[data-result-type="string"]')).to_have_text(
                    '"hello from valkey"'
                )
                await run(page, f"SET {key} overwritten")
                await expect(log.locator('[data-kind="refused"]')).to_have_text(
                    "SET is not allowed for members: the CLI is read-only for the member role"
                )
                await expect(log.locator('[data-kind="command"]').last).to_have_text(
                    f"127.0.0.1:{valkey_server.port}> SET {key} overwritten"
                )
        finally:
            await team.aclose()
    with valkey_server.client() as conn:
        assert conn.get(key) == "hello from valkey"


async def test_an_admin_with_unsafe_cli_writes_recalls_history_and_clears_the_screen(
    live_service_factory: LiveServiceFactory,
    open_page: PageFactory,
    valkey_server: RunningServer,
    key: str,
):
    settings = {**target_of(valkey_server), "WORKSPACE_DISABLED": False, "SVC_UNSAFE_CLI": True}
    async with live_service_factory(**settings) as service:
        team = ServedTeam(service.app, service.url)
        try:
            await team.claim()
            admin = await team.join("Ada", role="admin")
            async with open_page("about:blank") as page:
                await team.sign_in_page(page, admin)
                await page.goto(service.url + "/cli")
                await expect(page.locator("[data-cli-mode]")).to_contain_text(
                    "Write and admin commands are enabled"
                )
                log = page.get_by_role("log")
                await run(page, f'SET {key} "set from the browser"')
                await expect(log.locator('[data-result-type="status"]')).to_have_text("OK")
                await run(page, f"GET {key}")
                await expect(log.locator('[data-result-type="string"]')).to_have_text(
                    '"set from the browser"'
                )
                prompt = page.get_by_role("textbox", name="127.0.0.1")
                await prompt.press("ArrowUp")
                await expect(prompt).to_have_value(f"GET {key}")
                await prompt.press("ArrowUp")
                await expect(prompt).to_have_value(f'SET {key} "set from the browser"')
                await prompt.press("ArrowDown")
                await prompt.press("ArrowDown")
                await expect(prompt).to_have_value("")
                await prompt.press("Control+l")
                await expect(log.locator(".cli-line")).to_have_count(0)
        finally:
            await team.aclose()
    with valkey_server.client() as conn:
        assert conn.get(key) == "set from the browser"
