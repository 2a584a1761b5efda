"""The Anomalies page: locked on Community; on Pro the connection's correlated groups
with diagnosis and next step, and its baseline buffers warming up."""

import re

from svc_monitor.web.shell import CONNECTION_COOKIE
from tests.anomaly.test_api import one_group, push_connection
from tests.fixtures.app import AppFactory, RunningApp
from tests.fixtures.licensing import SigningKey
from tests.fixtures.servers import RunningServer


async def page(app: RunningApp) -> str:
    response = await app.client.get("/anomalies")
    assert response.status_code == 200, response.text
    return response.text


async def test_community_sees_it_locked(api: RunningApp):
    html = await page(api)
    assert 'href="/anomalies"' in html  # in the navigation
    assert 'data-state="locked"' in html
    assert 'data-section="anomaly-groups"' not in html


async def test_pro_shows_groups_and_buffers(
    memory_app_factory: AppFactory, signing_key: SigningKey, valkey_server: RunningServer
):
    licence = signing_key.mint(tier="pro")
    async with memory_app_factory(NODE_ENV="development", SVC_OFFLINE_LICENSE=licence) as app:
        connection = await push_connection(app)
        await one_group(app, connection, valkey_server)
        app.client.cookies.set(CONNECTION_COOKIE, connection)
        html = await page(app)
    assert 'data-state="locked"' not in html
    groups = re.findall(r'data-pattern="([^"]+)"', html)
    assert len(groups) == 1
    assert "Next step" in html
    assert re.search(r'data-metric="memory_used">.*?data-field="ready">yes<', html, re.S)
