"""A member's own personal token, end to end, with user control on: invited by the owner,
the member signs in, makes a token over the REST API, and an assistant uses it through
the MCP SDK's own client over stdio (`svc-monitor mcp` with SVC_URL and SVC_TOKEN) and
over HTTP at /mcp: read tools answer, admin tools are refused; once the member revokes
it, every MCP call with it is refused. Each step the activity log keeps is there, under
the member's name; refusals (401, 403) are not
(docs/features/users-and-access.md#activity-log)."""

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from mcp.shared.exceptions import MCPError

from tests.fixtures.mcp_service import Served, http_session, served_service, stdio_session, text_of
from tests.fixtures.servers import RunningServer
from tests.fixtures.workspace import PASSWORD

pytestmark = pytest.mark.slow  # a served app and `svc-monitor mcp` processes

MEMBER_REFUSED = "Not allowed: this needs the admin role, and you are a member (HTTP 403)"
SIGN_IN = "Sign in to use svc-monitor (HTTP 401)"
# Admin tools and arguments that would change something if they were let through.
ADMIN_CALLS: dict[str, dict[str, Any]] = {
    "start_monitor": {},
    "add_connection": {"name": "by-max", "host": "127.0.0.1", "port": 1},
    "set_default_connection": {"connection": "Default"},
}


@pytest.fixture
async def served(valkey_server: RunningServer) -> AsyncIterator[Served]:
    async with served_service(valkey_server) as service:
        yield service


async def sign_in(served: Served, email: str) -> httpx.AsyncClient:
    """A browser of theirs, signed in with the password they chose on accepting."""
    client = httpx.AsyncClient(base_url=served.url, headers={"Origin": served.url}, timeout=30)
    response = await client.post("/api/auth/login", json={"email": email, "password": PASSWORD})
    assert response.status_code == 200, response.text
    assert response.json()["role"] == "member"
    return client


async def max_entries(served: Served) -> list[dict[str, Any]]:
    return await served.activity(actor="Max", limit=100)


async def test_a_members_own_token_works_over_both_mcp_transports_until_revoked(
    served: Served,
):
    invited = await served.join("Max", "member")
    await invited.aclose()
    browser = await sign_in(served, "max@example.com")
    try:
        created = await browser.post("/api/tokens", json={"name": "laptop assistant"})
        assert created.status_code == 201, created.text
        token_id, secret = created.json()["id"], created.json()["token"]
        log = await max_entries(served)
        assert next(e["details"] for e in log if e["action"] == "auth.login") == {
            "method": "password"
        }
        made = next(e for e in log if e["action"] == "POST /api/tokens")
        assert (made["status"], made["objectId"]) == (201, token_id)

        async with stdio_session(served.url, secret) as stdio:
            await _reads_work_and_admin_tools_refuse(stdio)
            async with http_session(served.url, secret) as over_http:
                await _reads_work_and_admin_tools_refuse(over_http)
            log = await max_entries(served)
            calls = [e for e in log if e["action"] == "mcp:info_summary"]
            assert [e["details"] for e in calls] == [
                {"via": "token", "request": "GET /api/metrics/info"}
            ] * 2
            # The refused changes left no entry (a tool's look-up read before it may).
            tried = [e for e in log if e["action"].removeprefix("mcp:") in ADMIN_CALLS]
            assert [e for e in tried if not e["details"]["request"].startswith("GET ")] == []
            assert {e["status"] for e in tried} <= {200}
            connections = (await served.owner.get("/api/connections")).json()
            assert [c["name"] for c in connections] == ["Default"]
            assert (await served.owner.get("/api/monitor/sessions")).json() == []

            revoked = await browser.delete(f"/api/tokens/{token_id}")
            assert revoked.status_code == 204
            # The assistant that is still running is refused at its next call.
            after = await stdio.call_tool("info_summary", {})
            assert after.is_error
            assert SIGN_IN in text_of(after)

        async with stdio_session(served.url, secret) as stdio:
            again = await stdio.call_tool("health", {})
        assert again.is_error
        assert SIGN_IN in text_of(again)
        with pytest.raises(ExceptionGroup) as refused:
            async with http_session(served.url, secret):
                pass
        assert refused.group_contains(MCPError, depth=None)

        log = await max_entries(served)
        gone = next(e for e in log if e["action"] == "DELETE /api/tokens/{token_id}")
        assert (gone["status"], gone["objectId"]) == (204, token_id)
        assert log[0]["id"] == gone["id"]  # the refused calls after it left nothing
        assert secret not in (await served.owner.get("/api/workspace/activity?limit=100")).text
        listed = (await browser.get("/api/tokens")).json()
        assert [(t["name"], t["revokedAt"] is not None) for t in listed] == [
            ("laptop assistant", True)
        ]
    finally:
        await browser.aclose()


async def _reads_work_and_admin_tools_refuse(session: Any) -> None:
    summary = await session.call_tool("info_summary", {"connection": "Default"})
    assert not summary.is_error, text_of(summary)
    assert "memory: used" in text_of(summary)
    for name, arguments in ADMIN_CALLS.items():
        result = await session.call_tool(name, arguments)
        assert result.is_error, name
        assert MEMBER_REFUSED in text_of(result), (name, text_of(result))
