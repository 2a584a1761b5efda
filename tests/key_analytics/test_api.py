"""GET /api/key-analytics/*: the Pro gate, runs made by the poll loop, push connections,
and the Prometheus families, against real servers."""

from typing import Any

import pytest

from tests.fixtures.app import AppFactory, RunningApp, target_of
from tests.fixtures.licensing import SigningKey
from tests.fixtures.servers import RunningServer, ServerFactory
from tests.fixtures.waiting import eventually
from tests.key_analytics.keyspace import load
from tests.key_analytics.test_service import PATTERNS
from tests.prometheus.test_catalogue import of, samples

PATTERNS_URL = "/api/key-analytics/patterns"
SUMMARY_URL = "/api/key-analytics/summary"


@pytest.fixture(scope="module")
def keyed(server_factory: ServerFactory) -> RunningServer:
    server = server_factory.start("valkey")
    load(server, 200)  # 1,000 keys in 5 patterns
    return server


async def first_run(app: RunningApp) -> dict[str, Any]:
    """The summary once the poll loop's first run is stored."""
    found: dict[str, Any] = {}

    async def ran() -> bool:
        found.update((await app.client.get(SUMMARY_URL)).json())
        return found["timestamp"] is not None

    await eventually(ran, within=10)
    return found


class TestGate:
    @pytest.mark.parametrize("url", [PATTERNS_URL, SUMMARY_URL])
    async def test_community_gets_403_naming_the_feature(self, api: RunningApp, url: str):
        reply = await api.client.get(url)
        assert reply.status_code == 403
        body = reply.json()
        assert "Key analytics needs the Pro or Enterprise tier" in body["message"]
        assert (body["feature"], body["requiredTier"]) == ("keyAnalytics", "pro")

    async def test_community_runs_nothing(self, memory_app_factory: AppFactory, keyed):
        async with memory_app_factory(**target_of(keyed), KEY_ANALYTICS_INTERVAL_MS=200) as app:
            connection = await app.services.connections.resolve(None)
            polls = app.services.live_state.polls

            async def passed_twice() -> bool:
                return polls.passes.get((connection.id, "key_analytics", True), 0) >= 2

            await eventually(passed_twice, within=5)
            assert app.app.state.features.key_analytics.latest == {}


class TestPro:
    async def test_the_poll_loop_runs_and_the_routes_read_it(
        self, memory_app_factory: AppFactory, signing_key: SigningKey, keyed: RunningServer
    ):
        pro = signing_key.mint(tier="pro")
        async with memory_app_factory(**target_of(keyed), SVC_OFFLINE_LICENSE=pro) as app:
            summary = await first_run(app)
            patterns = (await app.client.get(PATTERNS_URL)).json()
        assert summary["keyspaceKeys"] == 1_000
        assert summary["sampledKeys"] == 1_000
        assert summary["totalPatterns"] == 5
        assert summary["complete"]
        assert summary["source"] == f"{keyed.host}:{keyed.port}"
        assert summary["nodesRead"] == 1
        assert not summary["onReplica"]
        assert "maxmemory-policy is noeviction" in summary["hotKeysNote"]
        assert {b["type"] for b in summary["sizeBuckets"]} == {"string", "hash", "list", "zset"}
        assert {p["pattern"] for p in patterns} == PATTERNS
        memory = [p["totalMemoryBytes"] for p in patterns]
        assert memory == sorted(memory, reverse=True)
        users = next(p for p in patterns if p["pattern"] == "user:*")
        assert users["keyCount"] == 200
        assert users["ttlShare"] == pytest.approx(0.25)
        assert {p["timestamp"] for p in patterns} == {summary["timestamp"]}

    async def test_a_window_returns_every_run_in_it(
        self, memory_app_factory: AppFactory, signing_key: SigningKey, keyed: RunningServer
    ):
        pro = signing_key.mint(tier="pro")
        async with memory_app_factory(**target_of(keyed), SVC_OFFLINE_LICENSE=pro) as app:
            first = await first_run(app)
            connection = await app.services.connections.resolve(None)
            service = app.app.state.features.key_analytics

            async def ran_again() -> bool:
                # None when the last poll read the server as under pressure (a loaded
                # machine's slow INFO): the run waits, as the poll loop's would.
                return await service.run(connection) is not None

            await eventually(ran_again, within=10, every=0.5)
            windowed = await app.client.get(
                PATTERNS_URL, params={"from": first["timestamp"], "pattern": "user:*"}
            )
            latest = (await app.client.get(PATTERNS_URL)).json()
        rows = windowed.json()
        assert windowed.status_code == 200
        assert len(rows) == 2
        assert {r["pattern"] for r in rows} == {"user:*"}
        assert rows[0]["timestamp"] > rows[1]["timestamp"] == first["timestamp"]
        assert len(latest) == 5

    async def test_a_push_connection_answers_409(
        self, memory_app_factory: AppFactory, signing_key: SigningKey
    ):
        pro = signing_key.mint(tier="pro")
        async with memory_app_factory(SVC_OFFLINE_LICENSE=pro) as app:
            made = await app.client.post(
                "/api/connections",
                json={"source": "push", "name": "edge", "host": "10.9.9.9", "port": 6392},
            )
            headers = {"X-Connection-Id": made.json()["id"]}
            reply = await app.client.get(PATTERNS_URL, headers=headers)
        assert reply.status_code == 409
        assert "needs a live connection" in reply.json()["message"]

    @pytest.mark.parametrize("profile", ["standard", "full"])
    async def test_prometheus_families(
        self,
        memory_app_factory: AppFactory,
        signing_key: SigningKey,
        keyed: RunningServer,
        profile: str,
    ):
        pro = signing_key.mint(tier="pro")
        async with memory_app_factory(
            **target_of(keyed), SVC_OFFLINE_LICENSE=pro, METRICS_EXPORT_PROFILE=profile
        ) as app:
            await first_run(app)
            text = (await app.client.get("/api/prometheus/metrics")).text
        found = samples(text)
        connection = f"{keyed.host}:{keyed.port}"
        buckets = of(found, "svc_keysize_bucket_keys", connection=connection)
        assert sum(s.value for s in buckets) == 1_000
        assert {s.labels["type"] for s in buckets} == {"string", "hash", "list", "zset"}
        users = of(found, "svc_key_pattern_keys", connection=connection, pattern="user:*")
        largest = of(found, "svc_key_memory_bytes", connection=connection)
        if profile == "standard":
            assert users == []
            assert largest == []
            return
        assert [s.value for s in users] == [200]
        assert of(found, "svc_key_pattern_memory_bytes", connection=connection, pattern="user:*")
        assert len(largest) == 20
        assert of(found, "svc_key_cardinality", connection=connection)
