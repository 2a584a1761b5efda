"""Push connections in the UI's HTML: who sees discovered pushers, the push dialog's
routes, and the live-only fragments a page refreshes (the browser tests are in
tests/e2e/test_ui_push.py)."""

import asyncio
import time
from typing import Any

import httpx
import pytest

from svc_monitor.web.shell import CONNECTION_COOKIE
from tests.fixtures.app import RunningApp
from tests.fixtures.workspace import Workspace

HTMX = {"HX-Request": "true"}
FORM = {**HTMX, "Content-Type": "application/x-www-form-urlencoded"}
NEEDS_LIVE = "This view needs a live connection"


def gauge_payload(host: str, port: str) -> dict[str, Any]:
    point = {"timeUnixNano": str(time.time_ns()), "asInt": "2048"}
    return {
        "resourceMetrics": [
            {
                "resource": {
                    "attributes": [
                        {"key": "server.address", "value": {"stringValue": host}},
                        {"key": "server.port", "value": {"stringValue": port}},
                    ]
                },
                "scopeMetrics": [
                    {"metrics": [{"name": "redis.memory.used", "gauge": {"dataPoints": [point]}}]}
                ],
            }
        ]
    }


async def discover(client: httpx.AsyncClient, host: str, port: int) -> None:
    """Push as an unregistered Collector would, until the API lists the pusher."""
    response = await client.post("/v1/external/metrics", json=gauge_payload(host, str(port)))
    assert response.status_code == 200, response.text
    for _ in range(100):  # bounded: 5 s
        listed = (await client.get("/api/connections/discovered")).json()
        if any(d["host"] == host and d["port"] == port for d in listed):
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"{host}:{port} was not discovered")


async def add_push(client: httpx.AsyncClient, name: str = "Edge") -> str:
    body = {"source": "push", "name": name, "host": "10.9.8.7", "port": 6390}
    response = await client.post("/api/connections", json=body)
    assert response.status_code == 201, response.text
    connection_id: str = response.json()["id"]
    return connection_id


class TestDiscoveredInTheSwitcher:
    async def test_admins_see_it_members_do_not(self, workspace: Workspace):
        await discover(workspace.owner.client, "127.0.0.1", 7101)
        member = await workspace.join("Mia")
        owner_page = (await workspace.owner.client.get("/")).text
        member_page = (await member.client.get("/")).text
        assert "1 discovered via OTLP" in owner_page
        assert "127.0.0.1:7101" in owner_page
        assert "discovered via OTLP" not in member_page

    async def test_a_member_cannot_dismiss(self, workspace: Workspace):
        await discover(workspace.owner.client, "127.0.0.1", 7102)
        member = await workspace.join("Max")
        path = "/ui/connections/discovered/127.0.0.1:7102/dismiss"
        refused = await member.client.post(path, headers=FORM)
        assert refused.status_code == 403
        dismissed = await workspace.owner.client.post(path, headers=FORM)
        assert dismissed.status_code == 200
        assert "discovered via OTLP" not in dismissed.text
        assert "discovered via OTLP" not in (await workspace.owner.client.get("/")).text

    async def test_everyone_sees_it_without_user_control(self, api: RunningApp):
        await discover(api.client, "127.0.0.1", 7103)
        assert "1 discovered via OTLP" in (await api.client.get("/")).text


class TestPushDialog:
    async def test_register_opens_the_push_tab_filled_in(self, api: RunningApp):
        query = {"source": "push", "name": "cache-7", "host": "127.0.0.1", "port": "7104"}
        dialog = (await api.client.get("/ui/connections/new", params=query)).text
        assert 'data-tab="push"' in dialog
        assert 'value="cache-7"' in dialog
        assert 'value="127.0.0.1"' in dialog
        assert 'value="7104"' in dialog
        assert "endpoint: &#34;127.0.0.1:7104&#34;" in dialog
        assert "http://svc.test/v1/external/metrics" in dialog

    async def test_registering_through_the_form_makes_a_push_connection(self, api: RunningApp):
        form = "source=push&name=Edge+cache&host=10.1.2.3&port=7105&engine=valkey"
        response = await api.client.post("/ui/connections", content=form, headers=FORM)
        assert response.status_code == 200, response.text
        assert response.headers["hx-refresh"] == "true"
        listed = (await api.client.get("/api/connections")).json()
        pushed = [c for c in listed if c["name"] == "Edge cache"]
        assert len(pushed) == 1
        assert pushed[0]["source"] == "push"
        assert (pushed[0]["host"], pushed[0]["port"]) == ("10.1.2.3", 7105)

    async def test_editing_a_push_connection_offers_only_its_address(self, api: RunningApp):
        connection_id = await add_push(api.client)
        dialog = (await api.client.get(f"/ui/connections/{connection_id}/edit")).text
        assert 'data-form="push"' in dialog
        assert 'name="password"' not in dialog
        assert "endpoint: &#34;10.9.8.7:6390&#34;" in dialog
        form = "name=Edge+renamed&host=10.9.8.7&port=6391&engine=redis"
        saved = await api.client.post(
            f"/ui/connections/{connection_id}", content=form, headers=FORM
        )
        assert saved.headers.get("hx-refresh") == "true", saved.text
        after = (await api.client.get(f"/api/connections/{connection_id}")).json()
        assert (after["name"], after["port"], after["source"]) == ("Edge renamed", 6391, "push")

    async def test_the_config_panel_says_what_to_type_first(self, api: RunningApp):
        empty = await api.client.get("/ui/connections/collector-config", params={"port": "1"})
        assert "Type the host the Collector reports" in empty.text
        bad = await api.client.get(
            "/ui/connections/collector-config", params={"host": "h", "port": "70000"}
        )
        assert "1 to 65535" in bad.text


class TestLiveOnlyFragments:
    @pytest.mark.parametrize(
        "path",
        ["/ui/slowlog/log", "/ui/clients/live", "/ui/cluster/live", "/ui/audit/trail"],
    )
    async def test_refreshed_parts_say_they_need_a_live_connection(
        self, path: str, api: RunningApp
    ):
        connection_id = await add_push(api.client)
        api.client.cookies.set(CONNECTION_COOKIE, connection_id)
        try:
            response = await api.client.get(path)
        finally:
            api.client.cookies.delete(CONNECTION_COOKIE)
        assert response.status_code == 200
        assert NEEDS_LIVE in response.text
        assert "Edge" in response.text
