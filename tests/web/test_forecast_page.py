"""The Forecast page: four cards over real stored history, their states, the chart data,
and the settings form (admins only)."""

import json
import re
from typing import Any

from svc_monitor.web.shell import CONNECTION_COOKIE
from tests.fixtures.app import RunningApp
from tests.fixtures.workspace import Workspace
from tests.forecast.history import MB, get, push_connection, record, steady_memory

FROM_PAGE = {"HX-Request": "true", "Content-Type": "application/x-www-form-urlencoded"}


def card(html: str, kind: str) -> str:
    found = re.search(
        rf'<article class="forecast-card" id="forecast-{kind}".*?</article>', html, re.S
    )
    assert found is not None, f"no {kind} card"
    return found.group(0)


def chart_of(html: str) -> dict[str, Any]:
    found = re.search(r"data-chart-data='([^']*)'", html)
    assert found is not None
    data: dict[str, Any] = json.loads(found.group(1))
    return data


async def page_of(app: RunningApp, connection: str) -> str:
    app.client.cookies.set(CONNECTION_COOKIE, connection)
    response = await app.client.get("/forecasting")
    assert response.status_code == 200, response.text
    return response.text


class TestForecastPage:
    async def test_four_cards_with_their_states(self, api: RunningApp):
        connection = await push_connection(api)
        await record(
            api, connection, samples=121, fields=steady_memory(100 * MB, MB, maxmemory=512 * MB)
        )
        await api.client.put(
            "/api/metric-forecasting/cpuTotal/settings",
            json={"enabled": False},
            headers={"X-Connection-Id": connection},
        )
        html = await page_of(api, connection)
        assert 'href="/forecasting"' in html  # in the navigation
        memory = card(html, "usedMemory")
        assert 'data-state="forecast"' in memory
        assert "~4.9h at current growth rate" in memory
        assert "512.0 MiB" in memory
        chart = chart_of(memory)
        assert len(chart["points"]) == 121
        assert len(chart["projection"]) == 2
        assert chart["ceiling"] == 512 * MB
        assert chart["unit"] == "bytes"
        assert 'data-state="disabled"' in card(html, "cpuTotal")
        assert "data-forecast-chart" not in card(html, "cpuTotal")
        assert 'data-state="trend"' in card(html, "opsPerSec")
        # an admin (user control off: everyone is) gets the settings form
        assert 'hx-post="/ui/forecasting/usedMemory/settings"' in memory

    async def test_too_little_history_says_so(self, api: RunningApp):
        connection = await push_connection(api)
        html = await page_of(api, connection)
        for kind in ("opsPerSec", "usedMemory", "cpuTotal", "memFragmentation"):
            assert 'data-state="insufficient"' in card(html, kind)
        assert "At least 30 minutes of monitoring history required" in html

    async def test_the_form_saves_through_the_api_rules(self, api: RunningApp):
        connection = await push_connection(api)
        api.client.cookies.set(CONNECTION_COOKIE, connection)
        form = {
            "enabled": "on",
            "ceiling": "2.5",
            "rollingWindowMinutes": "120",
            "alertThresholdMinutes": "30",
        }
        saved = await api.client.post(
            "/ui/forecasting/memFragmentation/settings", data=form, headers=FROM_PAGE
        )
        assert saved.status_code == 200, saved.text
        assert 'data-state="saved"' in saved.text
        body = await get(api, "/api/metric-forecasting/memFragmentation/settings", connection)
        assert (body["ceiling"], body["rollingWindowMs"], body["alertThresholdMs"]) == (
            2.5,
            7_200_000,
            1_800_000,
        )
        refused = await api.client.post(
            "/ui/forecasting/memFragmentation/settings",
            data={**form, "rollingWindowMinutes": "0.5", "ceiling": "0"},
            headers=FROM_PAGE,
        )
        assert refused.status_code == 200
        assert 'data-error-for="rollingWindowMs"' in refused.text
        assert 'data-error-for="ceiling"' in refused.text
        after = await get(api, "/api/metric-forecasting/memFragmentation/settings", connection)
        assert after == body  # nothing stored

    async def test_a_member_sees_no_form_and_may_not_post(self, workspace: Workspace):
        member = await workspace.join("Mia")
        page = await member.client.get("/forecasting")
        assert page.status_code == 200, page.text
        assert 'data-forecast="usedMemory"' in page.text
        assert "forecast-settings" not in page.text
        assert 'data-field="settings-summary"' in page.text
        refused = await member.client.post(
            "/ui/forecasting/usedMemory/settings",
            data={"enabled": "on", "rollingWindowMinutes": "60", "alertThresholdMinutes": "60"},
            headers=FROM_PAGE,
        )
        assert refused.status_code == 403
