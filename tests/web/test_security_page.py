"""The Security page: findings per connection (KEV first), end of life, and the version
attribute a push connection has not sent."""

import re

import httpx

from svc_monitor.web.shell import CONNECTION_COOKIE
from tests.cve.expected import affected_ids
from tests.cve.test_api import push, register_push, scanned
from tests.fixtures.app import AppFactory, RunningApp
from tests.fixtures.servers import RunningServer


async def page(app: RunningApp, connection_id: str | None = None) -> str:
    cookies = httpx.Cookies()
    if connection_id:
        cookies.set(CONNECTION_COOKIE, connection_id)
    app.client.cookies = cookies
    response = await app.client.get("/security")
    assert response.status_code == 200, response.text
    return response.text


def finding_rows(html: str) -> list[str]:
    return re.findall(r'<tr data-finding="([^"]+)"', html)


class TestSecurityPage:
    async def test_a_polled_valkey_shows_its_findings_and_the_nav_lists_the_page(
        self, memory_app_factory: AppFactory, valkey_server: RunningServer
    ):
        with valkey_server.client() as conn:
            version = str(conn.info("server")["valkey_version"])
        async with memory_app_factory() as app:
            await scanned(app)
            html = await page(app)
        assert 'data-nav="security"' in html
        assert f"Valkey {version}" in html
        assert set(finding_rows(html)) == affected_ids("valkey", version)
        assert "Redis 7.2.4" not in html

    async def test_kev_comes_first_and_end_of_life_shows(self, memory_app_factory: AppFactory):
        async with memory_app_factory(DB_HOST="127.0.0.1", DB_PORT=9) as app:
            connection_id = await register_push(app)
            await push(app, **{"redis.version": "5.0.7"})
            await scanned(app, connection_id)
            html = await page(app, connection_id)
        rows = finding_rows(html)
        assert rows[0] == "CVE-2022-0543"  # the KEV entry
        assert "EOL-redis-5.0" in rows
        assert 'data-eol="end_of_life"' in html
        assert "End of life since 2022-04-27" in html

    async def test_a_push_connection_without_a_version_names_the_attribute(
        self, memory_app_factory: AppFactory
    ):
        async with memory_app_factory(DB_HOST="127.0.0.1", DB_PORT=9) as app:
            connection_id = await register_push(app)
            html = await page(app, connection_id)
        missing = re.search(r"<code data-missing-attribute>([^<]+)</code>", html)
        assert missing is not None
        assert missing.group(1).startswith("redis.version")
        assert "valkey.version and db.system.name=valkey" in missing.group(1)
