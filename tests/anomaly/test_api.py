"""The anomaly routes on every storage backend: Pro only, events with filters, groups,
buffer state, resolving; and ANOMALY_DETECTION_ENABLED=false."""

from collections.abc import AsyncIterator
from typing import Any

import pytest

from svc_monitor.detection.anomaly.detectors import METRICS, READY_AT
from svc_monitor.detection.anomaly.feeds import FEED_METRICS
from svc_monitor.engine.info import parse_info
from svc_monitor.pipe.observation import Observation
from tests.anomaly.info import START_MS, info_text, rewrite, steady_load
from tests.fixtures.app import AppFactory, RunningApp
from tests.fixtures.licensing import SigningKey
from tests.fixtures.servers import RunningServer


@pytest.fixture
async def pro(app_factory: AppFactory, signing_key: SigningKey) -> AsyncIterator[RunningApp]:
    licence = signing_key.mint(tier="pro")
    async with app_factory(NODE_ENV="development", SVC_OFFLINE_LICENSE=licence) as app:
        yield app


async def push_connection(app: RunningApp, port: int = 6392) -> str:
    made = await app.client.post(
        "/api/connections",
        json={"source": "push", "name": f"a{port}", "host": "10.9.9.7", "port": port},
    )
    assert made.status_code == 201, made.text
    connection_id: str = made.json()["id"]
    return connection_id


async def one_group(app: RunningApp, connection_id: str, server: RunningServer) -> None:
    """Two minutes of steady load, then memory jumps and clients fall for 3 samples."""
    anomaly = app.app.state.features.anomaly
    text = info_text(server)
    for i, info in enumerate(steady_load(text, 120, seed=3)):
        anomaly.observe(Observation(connection_id, START_MS + i * 1000, info))
    odd = parse_info(rewrite(text, {"used_memory": 90_000_000, "connected_clients": 1}))
    for i in range(120, 123):
        anomaly.observe(Observation(connection_id, START_MS + i * 1000, odd))
    assert await anomaly.flush(everything=True) == 1


async def get(app: RunningApp, path: str, connection_id: str, **params: Any) -> Any:
    answer = await app.client.get(path, params=params, headers={"X-Connection-Id": connection_id})
    assert answer.status_code == 200, answer.text
    return answer.json()


class TestRoutes:
    async def test_events_groups_filters_and_resolve(
        self, pro: RunningApp, valkey_server: RunningServer
    ):
        connection = await push_connection(pro)
        await one_group(pro, connection, valkey_server)
        events = await get(pro, "/api/anomaly/events", connection)
        metrics = {e["metric"]: e for e in events}
        assert metrics["memory_used"]["anomalyType"] == "spike"
        assert metrics["connected_clients"]["anomalyType"] == "drop"
        assert all(e["resolved"] is False for e in events)
        [group] = await get(pro, "/api/anomaly/groups", connection)
        assert group["eventCount"] == len(events)
        assert {e["groupId"] for e in events} == {group["id"]}

        only = await get(pro, "/api/anomaly/events", connection, metric="memory_used")
        assert [e["metric"] for e in only] == ["memory_used"]
        critical = await get(pro, "/api/anomaly/events", connection, severity="critical")
        assert critical
        assert all(e["severity"] == "critical" for e in critical)
        assert await get(pro, "/api/anomaly/events", connection, until=START_MS) == []
        assert await get(pro, "/api/anomaly/events", connection, limit=1) == events[:1]

        headers = {"X-Connection-Id": connection}
        event_id = metrics["memory_used"]["id"]
        answer = await pro.client.post(f"/api/anomaly/events/{event_id}/resolve", headers=headers)
        assert answer.status_code == 204, answer.text
        resolved = await get(pro, "/api/anomaly/events", connection, resolved="true")
        assert [e["id"] for e in resolved] == [event_id]
        answer = await pro.client.post(
            f"/api/anomaly/groups/{group['id']}/resolve", headers=headers
        )
        assert answer.status_code == 204, answer.text
        assert await get(pro, "/api/anomaly/events", connection, resolved="false") == []
        assert (await get(pro, "/api/anomaly/groups", connection))[0]["resolved"] is True

        missing = await pro.client.post("/api/anomaly/events/99999/resolve", headers=headers)
        assert missing.status_code == 404
        other = await push_connection(pro, port=6393)  # another connection's ids are not found
        answer = await pro.client.post(
            f"/api/anomaly/events/{event_id}/resolve", headers={"X-Connection-Id": other}
        )
        assert answer.status_code == 404
        assert await get(pro, "/api/anomaly/events", other) == []

    async def test_buffers_show_warm_up_and_readiness(
        self, pro: RunningApp, valkey_server: RunningServer
    ):
        connection = await push_connection(pro)
        empty = await get(pro, "/api/anomaly/buffers", connection)
        # The INFO metrics, then the slow log's and latency's (listed before their first read).
        assert len(empty["buffers"]) == len(METRICS) + len(FEED_METRICS) >= 20
        assert all(b["samples"] == 0 and not b["ready"] for b in empty["buffers"])
        anomaly = pro.app.state.features.anomaly
        for i, info in enumerate(steady_load(info_text(valkey_server), READY_AT, seed=4)):
            anomaly.observe(Observation(connection, START_MS + i * 1000, info))
        body = await get(pro, "/api/anomaly/buffers", connection)
        buffers = {b["metric"]: b for b in body["buffers"]}
        assert body["readyAt"] == READY_AT
        assert buffers["memory_used"]["ready"] is True
        assert buffers["memory_used"]["mean"] == pytest.approx(50_000_000, rel=0.02)
        assert buffers["memory_used"]["stdDev"] > 0
        # a rate needs two samples: one fewer, not yet ready
        assert buffers["commands_rate"]["samples"] == READY_AT - 1
        assert buffers["commands_rate"]["ready"] is False


async def test_community_gets_403(memory_app_factory: AppFactory):
    async with memory_app_factory(NODE_ENV="development") as app:
        answer = await app.client.get("/api/anomaly/events")
    assert answer.status_code == 403
    assert answer.json()["feature"] == "anomalyDetection"


async def test_turned_off_detects_nothing_and_answers_404(
    memory_app_factory: AppFactory, signing_key: SigningKey
):
    licence = signing_key.mint(tier="pro")
    async with memory_app_factory(
        NODE_ENV="development", SVC_OFFLINE_LICENSE=licence, ANOMALY_DETECTION_ENABLED=False
    ) as app:
        anomaly = app.app.state.features.anomaly
        assert anomaly not in app.features.pipe.consumers
        answer = await app.client.get("/api/anomaly/groups")
    assert answer.status_code == 404
    assert "ANOMALY_DETECTION_ENABLED" in answer.json()["message"]
