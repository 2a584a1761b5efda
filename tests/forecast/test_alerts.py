"""metric_forecast.limit to a real webhook receiver: once per crossing, again only after
the time to the limit is comfortably above the threshold (x 1.1) once more; and the
svc_metric_forecast_time_to_limit_seconds family the same passes leave behind."""

from collections.abc import AsyncIterator
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.fixtures.app import AppFactory, RunningApp
from tests.fixtures.licensing import SigningKey
from tests.fixtures.receiver import Receiver
from tests.fixtures.waiting import eventually
from tests.forecast.history import MB, push_connection, record, steady_memory

EVENT = "metric_forecast.limit"
HOUR_MS = 3_600_000
MAXMEMORY = 512 * MB
FAMILY = "svc_metric_forecast_time_to_limit_seconds"


@pytest.fixture
async def pro(memory_app_factory: AppFactory, signing_key: SigningKey) -> AsyncIterator[RunningApp]:
    licence = signing_key.mint(tier="pro")
    async with memory_app_factory(NODE_ENV="development", SVC_OFFLINE_LICENSE=licence) as app:
        yield app


async def rising(app: RunningApp) -> str:
    """A push connection whose memory reaches maxmemory in ~4.9 h (see test_api.py)."""
    connection = await push_connection(app)
    await record(
        app, connection, samples=121, fields=steady_memory(100 * MB, MB, maxmemory=MAXMEMORY)
    )
    return connection


async def threshold(app: RunningApp, connection: str, hours: float) -> None:
    answer = await app.client.put(
        "/api/metric-forecasting/usedMemory/settings",
        json={"alertThresholdMs": int(hours * HOUR_MS)},
        headers={"X-Connection-Id": connection},
    )
    assert answer.status_code == 200, answer.text


async def evaluated(app: RunningApp) -> None:
    """One alert pass, and every delivery it caused made."""
    await app.app.state.features.forecast.evaluate()

    async def idle() -> bool:
        return app.services.webhook_dispatcher.idle

    await eventually(idle)
    await app.services.webhook_worker.settle()


def limits(receiver: Receiver) -> list[dict[str, Any]]:
    """Deliveries about usedMemory (the real INFO's fragmentation is over 1.5 too)."""
    return [
        r.json["data"]
        for r in receiver.requests
        if r.event == EVENT and r.json["data"]["metricKind"] == "usedMemory"
    ]


class TestLimitAlert:
    async def test_fires_once_and_again_only_after_recovery(
        self, pro: RunningApp, receiver: Receiver
    ):
        hook = await pro.client.post(
            "/api/webhooks", json={"name": "capacity", "url": receiver.url(), "events": [EVENT]}
        )
        assert hook.status_code == 201, hook.text
        connection = await rising(pro)
        await threshold(pro, connection, 6)  # 4.9 h to go: under 6 h
        await evaluated(pro)
        [data] = limits(receiver)
        assert data["ceiling"] == MAXMEMORY
        assert data["currentValue"] == 220 * MB
        assert data["growthRate"] == pytest.approx(60 * MB)
        assert 4.8 * HOUR_MS < data["timeToLimitMs"] < 4.9 * HOUR_MS
        assert data["alertThresholdMs"] == 6 * HOUR_MS
        assert (
            data["message"] == f"usedMemory is projected to reach its ceiling {MAXMEMORY} in 4.9 h"
        )
        await evaluated(pro)  # still under: nothing new
        await threshold(pro, connection, 4.6)  # 4.9 h is above 4.6 h but under x 1.1
        await evaluated(pro)
        await threshold(pro, connection, 6)
        await evaluated(pro)
        assert len(limits(receiver)) == 1
        await threshold(pro, connection, 4)  # 4.9 h > 4.4 h: recovered, re-armed
        await evaluated(pro)
        assert len(limits(receiver)) == 1
        await threshold(pro, connection, 6)
        await evaluated(pro)
        assert len(limits(receiver)) == 2

    async def test_community_may_not_subscribe(
        self, memory_app_factory: AppFactory, receiver: Receiver
    ):
        async with memory_app_factory(NODE_ENV="development") as app:
            allowed = (await app.client.get("/api/webhooks/allowed-events")).json()
            answer = await app.client.post(
                "/api/webhooks", json={"name": "c", "url": receiver.url(), "events": [EVENT]}
            )
        assert EVENT in allowed["lockedEvents"]
        assert answer.status_code == 403


async def scraped(app: RunningApp) -> dict[tuple[str, str], float]:
    text = (await app.client.get("/api/prometheus/metrics")).text
    found: dict[tuple[str, str], float] = {}
    for family in text_string_to_metric_families(text):
        if family.name == FAMILY:
            for sample in family.samples:
                found[(sample.labels["connection"], sample.labels["metric_kind"])] = sample.value
    return found


class TestPrometheusFamily:
    async def test_a_projection_is_a_series_until_it_is_gone(self, api: RunningApp):
        connection = await rising(api)

        async def registered() -> bool:  # the scrape's list of push connections has it
            pushed = api.features.metrics_receiver.push_connections()
            return any(c.id == connection for c in pushed)

        await eventually(registered)
        assert not any(address == "10.9.9.9:6390" for address, _ in await scraped(api))
        await api.app.state.features.forecast.evaluate()
        series = await scraped(api)
        seconds = series[("10.9.9.9:6390", "usedMemory")]
        assert 4.8 * 3600 < seconds < 4.9 * 3600
        # ops/sec has no ceiling (a trend) and CPU does not rise: no series
        assert ("10.9.9.9:6390", "opsPerSec") not in series
        assert ("10.9.9.9:6390", "cpuTotal") not in series
        await api.client.put(
            "/api/metric-forecasting/usedMemory/settings",
            json={"enabled": False},
            headers={"X-Connection-Id": connection},
        )
        await api.app.state.features.forecast.evaluate()
        assert ("10.9.9.9:6390", "usedMemory") not in await scraped(api)


class TestFragmentationAlert:
    async def test_only_fragmentation_worth_megabytes_alerts(
        self, pro: RunningApp, receiver: Receiver
    ):
        """An idle server's ratio is far over 1.5 with next to nothing fragmented: no
        alert; 160 MB fragmented at 1.8 is one."""
        hook = await pro.client.post(
            "/api/webhooks", json={"name": "frag", "url": receiver.url(), "events": [EVENT]}
        )
        assert hook.status_code == 201, hook.text
        idle = await push_connection(pro, port=6391)
        await record(
            pro,
            idle,
            samples=61,
            fields=lambda i: {"used_memory": MB, "mem_fragmentation_ratio": 6.0},
        )
        busy = await push_connection(pro, port=6392)
        await record(
            pro,
            busy,
            samples=61,
            fields=lambda i: {"used_memory": 200 * MB, "mem_fragmentation_ratio": 1.8},
        )
        await evaluated(pro)
        fragmentation = [
            r.json
            for r in receiver.requests
            if r.event == EVENT and r.json["data"]["metricKind"] == "memFragmentation"
        ]
        assert [d["instance"]["connectionId"] for d in fragmentation] == [busy]
        assert fragmentation[0]["data"]["timeToLimitMs"] == 0  # already over 1.5
        assert fragmentation[0]["data"]["message"] == "memFragmentation has reached its ceiling 1.5"
