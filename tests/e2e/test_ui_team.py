"""Users in a real Chromium: the claim, an invitation accepted in a second browser, what a
member may and may not do, the team and activity pages, and personal API tokens.

Each browser context is a different person (its own cookies). Every page fails its test
on a console error, except the refusals a test provokes on purpose (a member's 403).
"""

import contextlib
import json
import re
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager as AsyncContextManager
from typing import Any

import httpx
import pytest
from playwright.async_api import Page, expect

from tests.fixtures.app import target_of
from tests.fixtures.broker import Identity, SignInBroker
from tests.fixtures.browser import LiveService, LiveServiceFactory, PageFactory
from tests.fixtures.mcp_service import http_session, text_of
from tests.fixtures.servers import RunningServer

pytestmark = pytest.mark.slow

PASSWORD = "correct horse battery"
# Chromium's line for a refused request, and htmx's for the response it did not swap.
REFUSALS = ("status of 403", "Response Status Error Code 403")
MEMBER_REFUSED = "Not allowed: this needs the admin role, and you are a member"


async def claim(page: Page, *, name: str = "Olive Owner", email: str = "olive@example.com"):
    """On a fresh install every page opens on the claim: fill it in as the owner."""
    await expect(page).to_have_url(re.compile(r"/register$"))
    await page.fill('input[name="name"]', name)
    await page.fill('input[name="email"]', email)
    await page.fill('input[name="password"]', PASSWORD)
    await page.click('[data-action="claim"]')
    await expect(page.locator("[data-account] .account-name")).to_have_text(name)


OwnerFactory = Callable[..., AsyncContextManager[tuple[LiveService, Page]]]


@pytest.fixture
def signed_in_owner(
    live_service_factory: LiveServiceFactory, valkey_server: RunningServer, open_page: PageFactory
) -> OwnerFactory:
    """`async with signed_in_owner(**settings) as (service, owner)`: a live service with user
    control on, watching `valkey_server`, claimed through its page by the owner."""

    @contextlib.asynccontextmanager
    async def start(**settings: Any) -> AsyncIterator[tuple[LiveService, Page]]:
        values = {**target_of(valkey_server), "WORKSPACE_DISABLED": False, **settings}
        async with (
            live_service_factory(**values) as service,
            open_page(service.url + "/") as owner,
        ):
            await claim(owner)
            yield service, owner

    return start


async def invite(page: Page, service: LiveService, email: str, role: str = "member") -> str:
    """The owner (signed in on `page`) invites `email` on the Team page; the link shown."""
    await page.goto(service.url + "/team")
    form = page.locator("[data-invite-form]")
    await form.locator('input[name="email"]').fill(email)
    await form.locator('select[name="role"]').select_option(role)
    await form.locator('[data-action="invite"]').click()
    link = page.locator("[data-invite-link]")
    await expect(link).to_contain_text("/invite/")
    return (await link.inner_text()).strip()


async def accept(page: Page, name: str) -> None:
    await page.fill('input[name="name"]', name)
    await page.fill('input[name="password"]', PASSWORD)
    await page.click('[data-action="accept-invitation"]')
    await expect(page.locator("[data-account] .account-name")).to_have_text(name)


class TestJoining:
    async def test_an_invited_member_joins_sees_the_dashboard_and_is_refused_changes(
        self, signed_in_owner: OwnerFactory, open_page: PageFactory, valkey_server: RunningServer
    ):
        # SVC_UNSAFE_CLI: admins could write in the CLI; a member still cannot.
        async with signed_in_owner(SVC_UNSAFE_CLI=True) as (service, owner):
            link = await invite(owner, service, "mia@example.com")
            assert link.startswith(service.url + "/invite/")

            async with open_page(link, expected_errors=REFUSALS) as member:
                await expect(member.locator("[data-invite-email]")).to_have_text("mia@example.com")
                await expect(member.locator("[data-invite-role]")).to_have_text("member")
                await accept(member, "Mia Member")
                await expect(member).to_have_url(service.url + "/")
                async with httpx.AsyncClient(base_url=service.url) as anonymous:
                    health = (await anonymous.get("/api/health")).json()
                card = member.locator('[data-metric="version"] .card-value')
                await expect(card).to_have_text(health["database"]["version"])
                await expect(member.locator('[data-role="member"]').first).to_be_visible()

                await member.click('[data-action="add-connection"]')
                dialog = member.locator("#connection-dialog")
                await dialog.locator('input[name="host"]').fill("127.0.0.1")
                await dialog.locator('input[name="port"]').fill(str(valkey_server.port))
                await dialog.locator('[data-action="save-connection"]').click()
                await expect(member.locator("#toast")).to_contain_text(MEMBER_REFUSED)
                await expect(member.locator("#toast")).to_be_visible()

                # The CLI is read-only for a member, SVC_UNSAFE_CLI or not.
                await dialog.locator("[data-close-dialog]").click()
                await member.click('[data-nav="cli"]')
                prompt = member.get_by_role("textbox", name="127.0.0.1")
                await prompt.fill("SET joined:by mia")
                await prompt.press("Enter")
                await expect(
                    member.get_by_role("log").locator('[data-kind="refused"]')
                ).to_have_text(
                    "SET is not allowed for members: the CLI is read-only for the member role"
                )

            # The link worked once: the invitation is accepted, and nothing was added.
            await owner.goto(service.url + "/team")
            await expect(owner.locator('[data-member-name="Mia Member"]')).to_be_visible()
            async with httpx.AsyncClient(base_url=service.url) as anonymous:
                again = await anonymous.get("/api/auth/invitations/" + link.rsplit("/", 1)[1])
                assert again.status_code == 404
            connections = service.app.state.services.connections
            assert len(await connections.list()) == 1
            with valkey_server.client() as direct:
                assert direct.exists("joined:by") == 0

    async def test_a_used_or_altered_link_shows_why_it_does_not_work(
        self, signed_in_owner: OwnerFactory, open_page: PageFactory
    ):
        async with signed_in_owner() as (service, owner):
            link = await invite(owner, service, "ivy@example.com")
            async with open_page(link[:-3] + "xyz", expected_errors=("status of 404",)) as page:
                await expect(page.locator("[data-invite-invalid]")).to_contain_text("not valid")


class TestRolesInThePages:
    async def test_members_see_neither_the_activity_page_nor_admin_actions(
        self, signed_in_owner: OwnerFactory, open_page: PageFactory
    ):
        async with signed_in_owner() as (service, owner):
            await expect(owner.locator('[data-nav="activity"]')).to_be_visible()
            link = await invite(owner, service, "mia@example.com")
            async with open_page(link, expected_errors=REFUSALS) as member:
                await accept(member, "Mia")
                await expect(member.locator('[data-nav="team"]')).to_be_visible()
                await expect(member.locator('[data-nav="activity"]')).to_have_count(0)
                await member.goto(service.url + "/team")
                await expect(member.locator("[data-invite-form]")).to_have_count(0)
                await expect(member.locator('[data-action="remove-member"]')).to_have_count(0)
                members = member.locator("table[data-members]")
                await expect(members).to_contain_text("Olive Owner")
                await expect(members).not_to_contain_text("olive@example.com")
                await member.goto(service.url + "/activity")
                await expect(member.locator("h1")).to_have_text("Not allowed")
                await expect(member.locator("main")).to_contain_text("needs the admin role")

    async def test_the_owner_reads_the_activity_log_and_signs_out(
        self, signed_in_owner: OwnerFactory, open_page: PageFactory
    ):
        async with signed_in_owner() as (service, owner):
            await invite(owner, service, "mia@example.com")
            await owner.click('[data-nav="activity"]')
            rows = owner.locator("table[data-activity] tbody tr")
            await expect(rows.filter(has_text="POST /ui/team/invitations")).to_have_count(1)
            await expect(rows.filter(has_text="auth.login")).to_contain_text("register")
            await owner.click('[data-action="sign-out"]')
            await expect(owner).to_have_url(re.compile(r"/login$"))
            await owner.goto(service.url + "/settings")
            await expect(owner).to_have_url(re.compile(r"/login\?next=/settings$"))
            await owner.fill('input[name="email"]', "olive@example.com")
            await owner.fill('input[name="password"]', "not the password")
            await owner.click('[data-action="sign-in"]')
            await expect(owner.locator('[data-form-error="form"]')).to_have_text(
                "Invalid email or password"
            )
            await owner.fill('input[name="password"]', PASSWORD)
            await owner.click('[data-action="sign-in"]')
            await expect(owner).to_have_url(service.url + "/settings")


class TestApiTokens:
    async def test_a_token_made_in_settings_is_shown_once_and_works(
        self, signed_in_owner: OwnerFactory, open_page: PageFactory
    ):
        async with signed_in_owner() as (service, owner):
            await owner.goto(service.url + "/settings")
            tokens = owner.locator("#api-tokens")
            await tokens.locator('input[name="name"]').fill("grafana")
            await tokens.locator('[data-action="create-token"]').click()
            secret = (await owner.locator("[data-token-secret]").inner_text()).strip()
            assert secret.startswith("svc_pat_")
            async with httpx.AsyncClient(
                base_url=service.url, headers={"Authorization": f"Bearer {secret}"}
            ) as script:
                me = (await script.get("/api/auth/me")).json()
                assert me["name"] == "Olive Owner"
                await owner.reload()
                await expect(owner.locator("[data-token-secret]")).to_have_count(0)
                await expect(tokens.locator("tr[data-token]")).to_contain_text("grafana")
                await tokens.locator('[data-action="revoke-token"]').click()
                await expect(tokens.locator("tr[data-token]")).to_contain_text("revoked")
                assert (await script.get("/api/connections")).status_code == 401

    async def test_a_new_token_fills_both_mcp_snippets_and_copy_puts_them_on_the_clipboard(
        self, signed_in_owner: OwnerFactory
    ):
        async with signed_in_owner() as (service, owner):
            await owner.goto(service.url + "/settings")
            tokens = owner.locator("#api-tokens")
            await expect(tokens.get_by_role("heading", level=2)).to_have_text("API and MCP tokens")
            stdio = tokens.locator('[data-mcp-snippet="stdio"]')
            http = tokens.locator('[data-mcp-snippet="http"]')
            await expect(stdio).to_contain_text('"SVC_TOKEN": "<your token>"')
            await expect(http).to_contain_text('"Authorization": "Bearer <your token>"')

            await tokens.locator('input[name="name"]').fill("laptop MCP")
            await tokens.locator('[data-action="create-token"]').click()
            secret = (await owner.locator("[data-token-secret]").inner_text()).strip()
            assert secret.startswith("svc_pat_")
            await owner.context.grant_permissions(["clipboard-read", "clipboard-write"])
            for kind, snippet in (("stdio", stdio), ("http", http)):
                copy = tokens.locator(f'[data-action="copy-mcp-{kind}"]')
                await copy.click()
                await expect(copy).to_have_text("Copied")
                copied = await owner.evaluate("navigator.clipboard.readText()")
                assert copied.strip() == (await snippet.text_content() or "").strip()
                entry = json.loads(copied)["mcpServers"]["svc-monitor"]
                if kind == "stdio":
                    assert entry["args"] == ["mcp"]
                    assert entry["env"] == {"SVC_URL": service.url, "SVC_TOKEN": secret}
                else:
                    assert entry["url"] == service.url + "/mcp"
                    assert entry["headers"] == {"Authorization": f"Bearer {secret}"}

            await owner.reload()
            await expect(stdio).to_contain_text('"SVC_TOKEN": "<your token>"')
            await expect(tokens).not_to_contain_text(secret)


class TestAMembersTokens:
    async def test_a_member_makes_uses_and_revokes_their_own_token_in_settings(
        self, signed_in_owner: OwnerFactory, open_page: PageFactory
    ):
        async with signed_in_owner() as (service, owner):
            await owner.goto(service.url + "/settings")
            owners = owner.locator("#api-tokens")
            await owners.locator('input[name="name"]').fill("owner's grafana")
            await owners.locator('[data-action="create-token"]').click()
            await expect(owners.locator("tr[data-token]")).to_contain_text("owner's grafana")
            link = await invite(owner, service, "mia@example.com")

            async with open_page(link) as member:
                await accept(member, "Mia")
                await member.click('[data-nav="settings"]')
                tokens = member.locator("#api-tokens")
                await expect(tokens.locator("tr[data-token]")).to_have_count(0)
                await expect(tokens).not_to_contain_text("owner's grafana")
                await tokens.locator('input[name="name"]').fill("laptop MCP")
                await tokens.locator('[data-action="create-token"]').click()
                secret = (await member.locator("[data-token-secret]").inner_text()).strip()
                assert secret.startswith("svc_pat_")
                stdio = tokens.locator('[data-mcp-snippet="stdio"]')
                await expect(stdio).to_contain_text(f'"SVC_TOKEN": "{secret}"')
                async with http_session(service.url, secret) as assistant:
                    summary = await assistant.call_tool("info_summary", {})
                    assert "memory: used" in text_of(summary), text_of(summary)
                    refused = await assistant.call_tool("start_monitor", {})
                    assert MEMBER_REFUSED in text_of(refused)

                await member.reload()
                await expect(tokens.locator("tr[data-token]")).to_contain_text("laptop MCP")
                await tokens.locator('[data-action="revoke-token"]').click()
                await expect(tokens.locator("tr[data-token]")).to_contain_text("revoked")
                async with httpx.AsyncClient(
                    base_url=service.url, headers={"Authorization": f"Bearer {secret}"}
                ) as script:
                    assert (await script.get("/api/connections")).status_code == 401

            await owner.goto(service.url + "/activity")
            rows = owner.locator("table[data-activity] tbody tr").filter(has_text="Mia")
            for action in ("POST /ui/tokens", "POST /ui/tokens/{token_id}/revoke"):
                await expect(rows.and_(owner.locator(f'[data-action="{action}"]'))).to_have_count(1)
            await expect(
                rows.and_(owner.locator('[data-action="mcp:info_summary"]'))
            ).to_have_count(1)
            await expect(owner.locator("table[data-activity]")).not_to_contain_text(secret)
            await owner.goto(service.url + "/settings")
            await expect(owners.locator("tr[data-token]")).to_contain_text("active")


class TestThirdPartySignIn:
    async def test_the_first_person_through_the_broker_claims_then_a_stranger_is_told_why_not(
        self,
        live_service_factory: LiveServiceFactory,
        valkey_server: RunningServer,
        open_page: PageFactory,
        broker: SignInBroker,
    ):
        settings = {
            **target_of(valkey_server),
            "WORKSPACE_DISABLED": False,
            "AUTH_BROKER_URL": broker.url,
            "AUTH_BROKER_PUBLIC_KEY": broker.public_pem,
        }
        async with (
            live_service_factory(**settings) as service,
            open_page(service.url + "/") as page,
        ):
            await expect(page).to_have_url(re.compile(r"/register$"))
            broker.next_identity = Identity("robin@example.com", name="Robin Broker")
            await page.click('[data-broker-provider="github"]')
            await expect(page).to_have_url(service.url + "/")
            await expect(page.locator("[data-account] .account-name")).to_have_text("Robin Broker")
            await expect(page.locator('[data-role="owner"]').first).to_be_visible()
            await page.click('[data-action="sign-out"]')
            await expect(page).to_have_url(re.compile(r"/login$"))

            broker.next_identity = Identity("stranger@example.com", name="Stan")
            await page.click('[data-broker-provider="google"]')
            await expect(page.locator('[data-form-error="broker"]')).to_contain_text(
                "stranger@example.com"
            )
            await expect(page.locator("[data-account]")).to_have_count(0)
