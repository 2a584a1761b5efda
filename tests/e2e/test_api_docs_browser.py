"""Swagger UI at /api in a real Chromium: the document renders (OpenAPI 3.1), Authorize
takes a personal API token, and "Try it out" then calls the API with it."""

import httpx
import pytest
from playwright.async_api import expect

from tests.fixtures.app import target_of
from tests.fixtures.browser import LiveServiceFactory, PageFactory
from tests.fixtures.servers import RunningServer

pytestmark = pytest.mark.slow


async def owner_token(url: str) -> str:
    """Register the owner and make a personal token, as a script would."""
    async with httpx.AsyncClient(base_url=url, headers={"Origin": url}) as client:
        owner = {"email": "owner@example.com", "name": "Olive", "password": "correct horse battery"}
        assert (await client.post("/api/auth/register", json=owner)).status_code == 201
        made = await client.post("/api/tokens", json={"name": "swagger"})
        assert made.status_code == 201, made.text
        token: str = made.json()["token"]
    return token


async def test_authorize_with_a_token_then_try_an_operation(
    live_service_factory: LiveServiceFactory,
    valkey_server: RunningServer,
    open_page: PageFactory,
):
    async with live_service_factory(**target_of(valkey_server), WORKSPACE_DISABLED=False) as svc:
        token = await owner_token(svc.url)
        async with open_page(svc.url + "/api") as page:
            await page.get_by_role("button", name="Authorize").first.click()
            schemes = page.locator(".auth-container")
            await expect(schemes.filter(has_text="personalToken")).to_contain_text("Bearer")
            await expect(schemes.filter(has_text="sessionCookie")).to_contain_text("svc_session")
            bearer = schemes.filter(has_text="personalToken")
            await bearer.locator("input").fill(token)
            await bearer.locator("button.authorize").click()
            await page.locator(".btn-done").first.click()

            operation = page.locator("#operations-connections-connections_list")
            await operation.locator(".opblock-summary").click()
            await operation.get_by_role("button", name="Try it out").click()
            await operation.get_by_role("button", name="Execute").click()
            answer = operation.locator(".live-responses-table tbody .response-col_status").first
            await expect(answer).to_have_text("200")
            body = operation.locator(".live-responses-table .microlight").first
            await expect(body).to_contain_text('"isDefault": true')
