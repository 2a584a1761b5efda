"""Settings, API and MCP tokens over HTTP: the MCP client snippets carry this service's
address, a placeholder in place of any kept token, and the secret only when just made."""

import html
import json
import re
from collections.abc import AsyncIterator
from typing import Any

import pytest

from svc_monitor.app import _install_ui
from tests.fixtures.workspace import ORIGIN, PASSWORD, Workspace, WorkspaceFactory

HTML = {"Accept": "text/html"}
FROM_PAGE = {"HX-Request": "true", "Content-Type": "application/x-www-form-urlencoded"}
PLACEHOLDER = "<your token>"


@pytest.fixture
async def space(workspace_factory: WorkspaceFactory) -> AsyncIterator[Workspace]:
    async with workspace_factory() as opened:
        _install_ui(opened.app)
        yield opened


def snippets(page: str) -> dict[str, dict[str, Any]]:
    """Each snippet's one `mcpServers` entry, read as a client would read the pasted text."""
    found = re.findall(r'<pre[^>]*data-mcp-snippet="(\w+)"[^>]*>(.*?)</pre>', page, re.S)
    entries: dict[str, dict[str, Any]] = {}
    for kind, text in found:
        servers = json.loads(html.unescape(text))["mcpServers"]
        assert list(servers) == ["svc-monitor"]
        entries[kind] = servers["svc-monitor"]
    return entries


def assert_snippets(page: str, *, url: str, token: str) -> None:
    entries = snippets(page)
    assert entries["stdio"] == {
        "command": "svc-monitor",
        "args": ["mcp"],
        "env": {"SVC_URL": url, "SVC_TOKEN": token},
    }
    assert entries["http"] == {
        "type": "http",
        "url": f"{url}/mcp",
        "headers": {"Authorization": f"Bearer {token}"},
    }


class TestMcpSnippets:
    async def test_the_section_names_both_uses_and_shows_both_snippets_with_a_placeholder(
        self, space: Workspace
    ):
        page = await space.owner.client.get("/settings", headers=HTML)
        assert page.status_code == 200
        assert '<h2 id="tokens-title">API and MCP tokens</h2>' in page.text
        about = re.search(r"<p[^>]*data-tokens-about>(.*?)</p>", page.text, re.S)
        assert about is not None
        for words in ("with your role", "recorded under your name", "stops it at once"):
            assert words in about.group(1)
        assert_snippets(page.text, url=ORIGIN, token=PLACEHOLDER)
        assert page.text.count('data-copy="#mcp-stdio-config"') == 1
        assert page.text.count('data-copy="#mcp-http-config"') == 1

    async def test_a_kept_tokens_secret_never_reaches_the_page(self, space: Workspace):
        made = await space.owner.client.post("/api/tokens", json={"name": "laptop"})
        assert made.status_code == 201, made.text
        secret = made.json()["token"]
        page = await space.owner.client.get("/settings", headers=HTML)
        assert secret not in page.text
        assert_snippets(page.text, url=ORIGIN, token=PLACEHOLDER)

    async def test_a_token_just_made_fills_both_snippets_and_works(self, space: Workspace):
        made = await space.owner.client.post("/ui/tokens", content="name=laptop", headers=FROM_PAGE)
        assert made.status_code == 200, made.text
        secret = re.search(r"data-token-secret>(svc_pat_[^<]+)</code>", made.text)
        assert secret is not None
        assert_snippets(made.text, url=ORIGIN, token=secret.group(1))
        script = space.browser(Authorization=f"Bearer {secret.group(1)}")
        assert (await script.get("/api/auth/me")).json()["name"] == "Olive Owner"
        again = await space.owner.client.get("/settings", headers=HTML)
        assert secret.group(1) not in again.text

    async def test_a_member_sees_the_snippets_with_the_placeholder(self, space: Workspace):
        mia = await space.join("Mia")
        page = await mia.client.get("/settings", headers=HTML)
        assert 'data-action="create-token"' in page.text
        assert_snippets(page.text, url=ORIGIN, token=PLACEHOLDER)


class TestAMembersTokens:
    async def test_a_member_makes_and_revokes_their_own_token_from_the_page(self, space: Workspace):
        mia = await space.join("Mia")
        made = await mia.client.post("/ui/tokens", content="name=laptop", headers=FROM_PAGE)
        assert made.status_code == 200, made.text
        secret = re.search(r"data-token-secret>(svc_pat_[^<]+)</code>", made.text)
        assert secret is not None
        assert_snippets(made.text, url=ORIGIN, token=secret.group(1))
        script = space.browser(Authorization=f"Bearer {secret.group(1)}")
        assert (await script.get("/api/auth/me")).json()["role"] == "member"
        token_id = re.search(r'<tr data-token="(\w+)"', made.text)
        assert token_id is not None
        assert f'hx-post="/ui/tokens/{token_id.group(1)}/revoke"' in made.text

        revoked = await mia.client.post(f"/ui/tokens/{token_id.group(1)}/revoke", headers=FROM_PAGE)
        assert revoked.status_code == 200, revoked.text
        assert "Token revoked" in revoked.text
        assert (await script.get("/api/auth/me")).json()["signedIn"] is False
        entries = await space.activity(actor="Mia")
        assert {e["action"] for e in entries} >= {
            "POST /ui/tokens",
            "POST /ui/tokens/{token_id}/revoke",
        }

    async def test_another_users_token_is_neither_shown_nor_revoked(self, space: Workspace):
        ada = await space.join("Ada", role="admin")
        adas = (await ada.client.post("/api/tokens", json={"name": "ada laptop"})).json()
        mia = await space.join("Mia")
        page = await mia.client.get("/settings", headers=HTML)
        assert "ada laptop" not in page.text
        assert adas["id"] not in page.text
        refused = await mia.client.post(f"/ui/tokens/{adas['id']}/revoke", headers=FROM_PAGE)
        assert refused.status_code == 200
        assert "data-token-error" in refused.text
        assert "ada laptop" not in refused.text
        assert [t["revokedAt"] for t in (await ada.client.get("/api/tokens")).json()] == [None]

    async def test_the_public_url_when_set_is_the_address_given(
        self, workspace_factory: WorkspaceFactory
    ):
        # Plain http: an https address makes the session cookie Secure, which this client over
        # http would not send back.
        public = "http://monitor.example.com:8080"
        # The owner claims through the public address: the service expects it as the Origin.
        async with workspace_factory(claim=False, AUTH_PUBLIC_URL=public + "/") as proxied:
            _install_ui(proxied.app)
            browser = proxied.browser(Origin=public)
            claimed = await browser.post(
                "/api/auth/register",
                json={"email": "owner@example.com", "name": "Olive Owner", "password": PASSWORD},
            )
            assert claimed.status_code == 201, claimed.text
            page = await browser.get("/settings", headers=HTML)
            assert_snippets(page.text, url=public, token=PLACEHOLDER)
