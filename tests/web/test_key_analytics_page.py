"""The Key Analytics page: locked on Community, the newest run's patterns, sizes and hot
keys (or why none) on Pro, and the needs-live message for a push connection."""

import re

import pytest

from svc_monitor.web.shell import CONNECTION_COOKIE
from tests.fixtures.app import AppFactory, RunningApp, target_of
from tests.fixtures.licensing import SigningKey
from tests.fixtures.servers import RunningServer, ServerFactory
from tests.key_analytics.keyspace import load
from tests.key_analytics.test_api import first_run
from tests.key_analytics.test_service import PATTERNS


def section(html: str, name: str) -> str:
    found = re.search(rf'data-section="{name}".*?</section>', html, re.S)
    assert found is not None, f"no {name} section"
    return found.group(0)


async def page(app: RunningApp) -> str:
    response = await app.client.get("/key-analytics")
    assert response.status_code == 200, response.text
    return response.text


@pytest.fixture(scope="module")
def keyed(server_factory: ServerFactory) -> RunningServer:
    server = server_factory.start("valkey")
    load(server, 100)  # 500 keys in 5 patterns
    return server


class TestKeyAnalyticsPage:
    async def test_community_sees_it_locked(self, api: RunningApp):
        html = await page(api)
        assert 'href="/key-analytics"' in html  # in the navigation
        assert 'data-state="locked"' in html
        assert "Key analytics needs the Pro or Enterprise tier" in html
        assert 'data-section="key-patterns"' not in html

    async def test_pro_shows_the_newest_run(
        self, memory_app_factory: AppFactory, signing_key: SigningKey, keyed: RunningServer
    ):
        pro = signing_key.mint(tier="pro")
        async with memory_app_factory(**target_of(keyed), SVC_OFFLINE_LICENSE=pro) as app:
            summary = await first_run(app)
            html = await page(app)
        assert 'data-state="locked"' not in html
        assert f'data-captured-at="{summary["timestamp"]}"' in html
        assert "500 keys sampled of 500" in html
        patterns = section(html, "key-patterns")
        assert set(re.findall(r'data-pattern="([^"]+)"', patterns)) == PATTERNS
        assert re.search(r'data-pattern="user:\*">.*?data-field="keys">100<', patterns, re.S)
        sizes = section(html, "key-sizes")
        assert set(re.findall(r'data-type="([^"]+)"', sizes)) == {"string", "hash", "list", "zset"}
        drawn = sum(int(n) for n in re.findall(r'data-keys="(\d+)"', sizes))
        assert drawn == 500
        assert len(re.findall(r"data-key=", section(html, "largest-keys"))) == 20
        hot = section(html, "hot-keys")
        assert 'data-state="no-hot-keys"' in hot
        assert "noeviction" in hot

    async def test_a_push_connection_needs_a_live_one(
        self, memory_app_factory: AppFactory, signing_key: SigningKey
    ):
        pro = signing_key.mint(tier="pro")
        async with memory_app_factory(SVC_OFFLINE_LICENSE=pro) as app:
            made = await app.client.post(
                "/api/connections",
                json={"source": "push", "name": "edge", "host": "10.9.9.9", "port": 6393},
            )
            app.client.cookies.set(CONNECTION_COOKIE, made.json()["id"])
            html = await page(app)
        assert 'data-problem="needs-live-connection"' in html
        assert 'data-section="key-patterns"' not in html
