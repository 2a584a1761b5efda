"""Done means: against a real Valkey with a small maxmemory, a steady synthetic load and
then a burst of writes that evicts raise memory and eviction anomalies grouped as
memory pressure, one `anomaly.detected` per group reaches a real webhook receiver, and
the steady phase raises nothing.

The server's real INFO is read after each step of load and fed to the app's anomaly
service with a simulated 1 s clock, as the observations of a push connection that
nothing polls (so the app's own polls never mix real time into its baselines).
"""

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
import valkey
from prometheus_client.parser import text_string_to_metric_families

from svc_monitor.anomaly.service import AnomalyService
from svc_monitor.engine.info import parse_info
from svc_monitor.pipe.observation import Observation
from tests.anomaly.info import START_MS, info_text
from tests.fixtures.app import AppFactory, RunningApp
from tests.fixtures.licensing import SigningKey
from tests.fixtures.receiver import Receiver
from tests.fixtures.servers import RunningServer
from tests.fixtures.waiting import eventually

EVENT = "anomaly.detected"
STEADY_SAMPLES = 120
BURST_SAMPLES = 4
AFTER_SAMPLES = 8
PACE_S = 0.02
RSS_REFRESH_S = 0.25


@pytest.fixture
async def pro(memory_app_factory: AppFactory, signing_key: SigningKey) -> AsyncIterator[RunningApp]:
    licence = signing_key.mint(tier="pro")
    async with memory_app_factory(NODE_ENV="development", SVC_OFFLINE_LICENSE=licence) as app:
        yield app


@pytest.fixture
def small(fresh: Callable[..., RunningServer]) -> RunningServer:
    return fresh("valkey", config={"maxmemory": "8mb", "maxmemory-policy": "allkeys-lru"})


async def push_connection(app: RunningApp) -> str:
    made = await app.client.post(
        "/api/connections",
        json={"source": "push", "name": "anomaly", "host": "10.9.9.8", "port": 6391},
    )
    assert made.status_code == 201, made.text
    connection_id: str = made.json()["id"]
    return connection_id


def steady_step(client: valkey.Valkey, i: int) -> None:
    """One second of a light steady load: 50 writes and reads over 200 small keys."""
    pipe = client.pipeline(transaction=False)
    for k in range(50):
        key = f"steady:{(i * 50 + k) % 200}"
        pipe.set(key, "v" * 64)
        pipe.get(key)
    pipe.execute()  # type: ignore[no-untyped-call]


def burst_step(client: valkey.Valkey, i: int) -> None:
    """A burst of large writes: 4 MB a step, past the 8 MB maxmemory, so keys are evicted."""
    pipe = client.pipeline(transaction=False)
    for k in range(400):
        pipe.set(f"burst:{i}:{k}", "x" * 10_000)
    pipe.execute()  # type: ignore[no-untyped-call]


class Feeder:
    def __init__(self, anomaly: AnomalyService, connection_id: str, server: RunningServer):
        self.anomaly = anomaly
        self.connection_id = connection_id
        self.server = server
        self.second = 0

    def observe(self) -> None:
        info = parse_info(info_text(self.server))
        at = START_MS + self.second * 1000
        self.anomaly.observe(Observation(self.connection_id, at, info, pushed=True))
        self.second += 1


async def delivered(app: RunningApp) -> None:
    async def idle() -> bool:
        return app.services.webhook_dispatcher.idle

    await eventually(idle)
    await app.services.webhook_worker.settle()


def anomaly_hooks(receiver: Receiver) -> list[dict[str, Any]]:
    return [r.json["data"] for r in receiver.requests if r.event == EVENT]


class TestMemoryPressure:
    async def test_a_burst_with_evictions_is_one_memory_pressure_group(
        self, pro: RunningApp, receiver: Receiver, small: RunningServer
    ):
        hook = await pro.client.post(
            "/api/webhooks", json={"name": "anomalies", "url": receiver.url(), "events": [EVENT]}
        )
        assert hook.status_code == 201, hook.text
        connection = await push_connection(pro)
        anomaly = pro.app.state.features.anomaly
        feeder = Feeder(anomaly, connection, small)
        client = small.client()
        # instantaneous_ops_per_sec is the server's own, over its last 1.6 s of real time:
        # pace the steps evenly and let that figure settle before the first sample.
        for i in range(STEADY_SAMPLES + 100):
            await asyncio.sleep(PACE_S)
            steady_step(client, i)
            if i >= 100:
                feeder.observe()
        assert anomaly.pending_detections == 0
        assert await anomaly.flush(everything=True) == 0  # nothing in the steady phase
        for i in range(BURST_SAMPLES):
            burst_step(client, i)
            # used_memory_rss is refreshed by the server's cron (10 Hz), not on each write:
            # give it a tick, as the real 1 s between polls would.
            await asyncio.sleep(RSS_REFRESH_S)
            feeder.observe()
        for i in range(AFTER_SAMPLES):
            await asyncio.sleep(PACE_S)
            steady_step(client, STEADY_SAMPLES + i)
            feeder.observe()
        stats: dict[str, Any] = client.info("stats")  # type: ignore[assignment]
        assert int(stats["evicted_keys"]) > 0
        client.close()  # type: ignore[no-untyped-call]
        # The quiet samples after the burst close its window by the simulated clock, and the
        # service's own loop may publish it before this flush does: count what is stored.
        await anomaly.flush(everything=True)
        await delivered(pro)
        headers = {"X-Connection-Id": connection}

        groups = (await pro.client.get("/api/anomaly/groups", headers=headers)).json()
        assert len(groups) >= 1
        assert anomaly.pending_detections == 0
        pressure = [g for g in groups if g["pattern"] == "memory_pressure"]
        assert len(pressure) == 1, [(g["metrics"], g["timestamp"]) for g in groups]
        assert {"memory_used", "evictions"} <= set(pressure[0]["metrics"])
        assert "evicted" in pressure[0]["diagnosis"]

        await receiver.wait_for(len(groups))
        await delivered(pro)  # and nothing more than one per group
        hooks = anomaly_hooks(receiver)
        assert len(hooks) == len(groups)  # one per group, not one per sample
        [data] = [h for h in hooks if h["pattern"] == "memory_pressure"]
        assert data["anomalyId"] == str(pressure[0]["id"])
        assert data["metricType"] in pressure[0]["metrics"]
        assert data["severity"] == pressure[0]["severity"]
        assert {"memory_used", "evictions"} <= set(data["relatedMetrics"])

        events = (await pro.client.get("/api/anomaly/events", headers=headers)).json()
        ids = {e["groupId"] for e in events}
        assert ids == {g["id"] for g in groups}
        memory = (
            await pro.client.get(
                "/api/anomaly/events", params={"metric": "memory_used"}, headers=headers
            )
        ).json()
        assert [e["anomalyType"] for e in memory] == ["spike"]

        anomaly.refresh_summary()
        await pro.features.metrics_receiver.refresh()
        text = (await pro.client.get("/api/prometheus/metrics")).text
        found = {
            (
                s.name,
                s.labels.get("pattern") or s.labels.get("metric"),
                s.labels.get("connection"),
            ): s.value
            for f in text_string_to_metric_families(text)
            for s in f.samples
            if s.name.startswith(("svc_anomaly", "svc_correlated"))
        }
        address = "10.9.9.8:6391"
        assert found[("svc_correlated_groups_by_pattern", "memory_pressure", address)] == 1
        assert found[("svc_correlated_groups_total", None, address)] == len(groups)
        assert found[("svc_anomaly_buffer_ready", "memory_used", address)] == 1
        assert (
            sum(
                v
                for (name, metric, a), v in found.items()
                if name == "svc_anomaly_events_total" and metric == "evictions" and a == address
            )
            == 1
        )


class TestRegistryChanges:
    async def test_a_change_read_late_keeps_samples_taken_after_it(
        self, pro: RunningApp, small: RunningServer
    ):
        """The loop reads ConnectionsChanged up to a second late: creating a connection
        must not throw away the samples its first second already brought."""
        connection = await push_connection(pro)  # publishes ConnectionsChanged
        anomaly = pro.app.state.features.anomaly
        feeder = Feeder(anomaly, connection, small)
        feeder.observe()
        feeder.observe()

        service: AnomalyService = anomaly

        def samples() -> int:
            return max(state.samples for state in service.buffers(connection))

        assert samples() > 0
        await asyncio.sleep(2.5)  # the loop has now read the creation
        assert samples() > 0
        edited = await pro.client.put(f"/api/connections/{connection}", json={"name": "renamed"})
        assert edited.status_code == 200, edited.text
        await asyncio.sleep(2.5)  # an edit after the samples: the baselines start over
        assert samples() == 0
