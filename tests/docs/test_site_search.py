"""The built site opened from disk, as the README says (`site/index.html`, no web server):
its search finds pages, and it asks nothing of the network."""

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from playwright.async_api import Browser, Page, expect

pytestmark = pytest.mark.slow


@pytest.fixture
async def home(browser: Browser, built_site: Path) -> AsyncIterator[Page]:
    """site/index.html in a fresh browser context; any request off the file system, console
    error or script error fails the test."""
    context = await browser.new_context(viewport={"width": 1280, "height": 800})
    page = await context.new_page()
    page.set_default_timeout(10_000)
    problems: list[str] = []
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on(
        "console",
        lambda m: problems.append(f"console error: {m.text}") if m.type == "error" else None,
    )
    page.on(
        "request",
        lambda r: None if r.url.startswith("file://") else problems.append(f"request: {r.url}"),
    )
    try:
        await page.goto((built_site / "index.html").as_uri())
        yield page
    finally:
        await context.close()
    assert not problems, problems


async def test_search_from_the_file_finds_the_page_a_setting_is_on(home: Page) -> None:
    box = home.locator('input[data-md-component="search-query"]')
    await box.click()
    await box.press_sequentially("ENCRYPTION_KEY", delay=20)
    results = home.locator(".md-search-result__item")
    await expect(results.first).to_be_visible()
    configuration = home.locator('.md-search-result a[href*="reference/configuration.html"]')
    await expect(configuration.first).to_be_attached()
    await configuration.first.click()
    await expect(home).to_have_title("Configuration - svc-monitor")
    assert home.url.startswith("file://")
