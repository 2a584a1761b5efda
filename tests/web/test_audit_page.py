"""The ACL audit page against a real Valkey: denials the audit poll stores show on it."""

import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import valkey.asyncio as avalkey
from markupsafe import escape
from valkey import exceptions as vx

from tests.fixtures.app import AppFactory, RunningApp
from tests.fixtures.servers import RunningServer, ServerFactory
from tests.fixtures.waiting import eventually

# `watcher` may run everything but ACL: the monitor connected as it cannot read ACL LOG.
USERS = ["limited on >pw ~* +get", "watcher on >pw ~* &* +@all -@admin -acl"]
AUDIT_MS = 150


@pytest.fixture(scope="module")
def acl_server(server_factory: ServerFactory) -> Iterator[RunningServer]:
    server = server_factory.start("valkey", acl_users=USERS)
    yield server
    server_factory.stop(server)


@pytest.fixture
async def app(
    memory_app_factory: AppFactory, acl_server: RunningServer
) -> AsyncIterator[RunningApp]:
    with acl_server.client() as direct:
        direct.execute_command("ACL", "LOG", "RESET")
    settings = {"DB_HOST": acl_server.host, "DB_PORT": acl_server.port}
    async with memory_app_factory(**settings, AUDIT_POLL_INTERVAL_MS=AUDIT_MS) as running:
        await polled_once(running)
        yield running


async def polled_once(app: RunningApp, connection_id: str = "env-default") -> None:
    async def polled() -> bool:
        loop = app.features.supervisor.loops_of(connection_id).get("audit")
        seen = app.services.connections.last_seen(await app.services.connections.get(connection_id))
        return bool(loop and loop.ticks >= 1 and seen and seen.identity)

    await eventually(polled)


async def wrong_password(server: RunningServer, username: str) -> None:
    client = avalkey.Valkey(host=server.host, port=server.port, username=username, password="no")
    try:
        with pytest.raises(vx.AuthenticationError):
            await client.ping()
    finally:
        await client.aclose()


async def stored(app: RunningApp, **query: Any) -> list[dict[str, Any]]:
    response = await app.client.get("/api/audit/entries", params=query)
    assert response.status_code == 200, response.text
    body: list[dict[str, Any]] = response.json()
    return body


async def page(app: RunningApp, query: str = "") -> str:
    response = await app.client.get(f"/audit{query}")
    assert response.status_code == 200, response.text
    assert 'data-problem="error"' not in response.text
    return response.text


def section(body: str, name: str) -> str:
    return body.split(f'data-section="{name}"')[1].split("</section>")[0]


class TestAuditPage:
    async def test_a_failed_auth_shows_after_the_audit_poll(
        self, app: RunningApp, acl_server: RunningServer
    ):
        assert "No ACL denials stored yet" in await page(app)
        await wrong_password(acl_server, "limited")
        await wrong_password(acl_server, "limited")

        async def recorded() -> bool:
            return any(e["username"] == "limited" for e in await stored(app, reason="auth"))

        await eventually(recorded)
        [entry] = await stored(app, reason="auth")
        body = await page(app)
        failed = section(body, "failed-auth")
        assert 'data-username="limited"' in failed
        assert f'<td class="num" data-field="count">{entry["count"]}</td>' in failed
        stats = (await app.client.get("/api/audit/stats")).json()
        cards = section(body, "stats")
        assert (
            f'<div class="card-value">{stats["totalEntries"]}</div>'
            in cards.split('data-metric="total-entries"')[1]
        )
        assert (
            f'<div class="card-value">{stats["uniqueUsers"]}</div>'
            in cards.split('data-metric="unique-users"')[1]
        )
        auth_card = cards.split('data-metric="reason-auth"')[1].split("</div>\n</div>")[0]
        assert f'<div class="card-value">{stats["byReason"]["auth"]["entries"]}</div>' in auth_card
        # The refreshing fragment holds the same rows.
        fragment = await app.client.get("/ui/audit/trail")
        assert 'data-username="limited"' in fragment.text

    async def test_filters_narrow_the_entries_and_page_through_them(
        self, app: RunningApp, acl_server: RunningServer
    ):
        await wrong_password(acl_server, "limited")
        await wrong_password(acl_server, "somebody-else")
        limited = avalkey.Valkey(
            host=acl_server.host,
            port=acl_server.port,
            username="limited",
            password="pw",
            lib_name=None,
            lib_version=None,
        )
        try:
            with pytest.raises(vx.NoPermissionError):
                await limited.set("k", "v")
        finally:
            await limited.aclose()

        async def recorded() -> bool:
            return len(await stored(app)) >= 3

        await eventually(recorded)
        entries = section(await page(app, "?username=limited"), "entries")
        assert 'data-username="limited"' in entries
        assert 'data-username="somebody-else"' not in entries
        assert 'data-reason="auth"' in entries
        assert 'data-reason="command"' in entries

        commands = section(await page(app, "?reason=command&window=1h"), "entries")
        assert 'data-reason="command"' in commands
        assert 'data-reason="auth"' not in commands

        nobody = section(await page(app, "?username=nobody-at-all"), "entries")
        assert "No stored entries match these filters." in nobody
        # Unknown values fall back to no filter rather than an error page.
        assert 'data-username="somebody-else"' in section(
            await page(app, "?reason=bogus&window=forever&page=x"), "entries"
        )

    async def test_a_custom_from_to_window_keeps_only_its_entries(
        self, app: RunningApp, acl_server: RunningServer
    ):
        await wrong_password(acl_server, "limited")

        async def recorded() -> bool:
            return bool(await stored(app, reason="auth"))

        await eventually(recorded)
        now = int(time.time() * 1000)
        around = section(await page(app, f"?from={now - 600_000}&to={now + 60_000}"), "entries")
        assert 'data-username="limited"' in around
        day_before = now - 86_400_000
        yesterday = await page(app, f"?from={day_before}&to={day_before + 3_600_000}")
        assert 'data-username="limited"' not in section(yesterday, "entries")
        assert "No failed authentications stored in this window." in yesterday
        assert f'name="from" value="{day_before}"' in yesterday
        assert "Clear filters" in yesterday

    async def test_hostile_usernames_are_shown_escaped(
        self, app: RunningApp, acl_server: RunningServer
    ):
        script = "<script>alert('x')</script>"
        crlf = 'two\r\nlines"><b>bold</b>'
        await wrong_password(acl_server, script)
        await wrong_password(acl_server, crlf)

        async def recorded() -> bool:
            names = {e["username"] for e in await stored(app, reason="auth")}
            return {script, crlf} <= names

        await eventually(recorded)
        body = await page(app)
        assert script not in body
        assert "<b>bold</b>" not in body
        assert str(escape(script)) in body
        assert str(escape(crlf)) in body
        fragment = (await app.client.get("/ui/audit/trail")).text
        assert script not in fragment
        assert str(escape(script)) in fragment

    async def test_an_instance_that_refuses_acl_log_explains_why(
        self, memory_app_factory: AppFactory, acl_server: RunningServer
    ):
        settings = {
            "DB_HOST": acl_server.host,
            "DB_PORT": acl_server.port,
            "DB_USERNAME": "watcher",
            "DB_PASSWORD": "pw",
        }
        async with memory_app_factory(**settings) as app:

            async def detected() -> bool:
                connection = await app.services.connections.get("env-default")
                seen = app.services.connections.last_seen(connection)
                return bool(seen and seen.identity)

            await eventually(detected)
            body = await page(app)
        assert 'data-problem="unsupported"' in body
        # Valkey has ACL: the page says the user may not run it, in the server's words.
        assert "ACL LOG is not available on this server" in body
        assert "this connection&#39;s user is not allowed to run it (NOPERM" in body
        assert 'data-section="entries"' not in body
