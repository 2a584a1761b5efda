"""Key analytics runs against real servers: patterns and memory against the independent
truth, the cursor kept across a restart, replicas, LFU hot keys, push connections."""

import asyncio
import time
from typing import Any

import pytest

from svc_monitor.connections.models import Connection
from svc_monitor.connections.service import NeedsLiveConnection
from svc_monitor.key_analytics.models import Snapshot
from svc_monitor.key_analytics.service import KeyAnalyticsService
from tests.fixtures.app import AppFactory, RunningApp, make_settings, running_app, target_of
from tests.fixtures.servers import RunningServer, ServerFactory
from tests.key_analytics.keyspace import load, memory_truth

PRESSURE_RETRIES = 20
PATTERNS = {"user:*", "session:*", "cache:page:*", "queue:*:jobs", "score:*"}


def analytics(app: RunningApp) -> KeyAnalyticsService:
    service: KeyAnalyticsService = app.app.state.features.key_analytics
    return service


async def default_connection(app: RunningApp) -> Connection:
    return await app.services.connections.resolve(None)


async def run(app: RunningApp, **kw: Any) -> Snapshot:
    """One run; a run skipped because the server looks under pressure (a loaded test
    machine: INFO over 100 ms, or the load just sent counting as CPU) is tried again."""
    connection = await default_connection(app)
    for _ in range(PRESSURE_RETRIES):
        snapshot = await analytics(app).run(connection, **kw)
        if snapshot is not None:
            return snapshot
        await asyncio.sleep(0.5)
    raise AssertionError(f"every run skipped: server under pressure {PRESSURE_RETRIES} times")


@pytest.fixture(scope="module")
def loaded(server_factory: ServerFactory) -> RunningServer:
    """100,000 keys in 5 patterns of 20,000 each."""
    server = server_factory.start("valkey")
    started = time.perf_counter()
    load(server, 20_000)
    assert time.perf_counter() - started < 15
    return server


class TestPatternsAndMemory:
    async def test_100k_keys_in_5_patterns_within_10_percent_of_memory_usage(
        self, memory_app_factory: AppFactory, loaded: RunningServer
    ):
        truth = memory_truth(loaded)
        assert set(truth) == PATTERNS
        async with memory_app_factory(**target_of(loaded)) as app:
            snapshot = await run(app, budget_s=20)
        assert snapshot.keyspace_keys == 100_000
        assert snapshot.sampled_keys == 10_000  # KEY_ANALYTICS_SAMPLE_SIZE's default
        assert snapshot.complete
        assert not snapshot.on_replica
        found = {p.pattern: p for p in snapshot.patterns}
        assert set(found) == PATTERNS
        for name, true_bytes in truth.items():
            estimate = found[name].total_memory_bytes
            assert abs(estimate - true_bytes) <= 0.10 * true_bytes, (name, estimate, true_bytes)
            assert found[name].key_count == pytest.approx(20_000, rel=0.10)
        total = sum(p.total_memory_bytes for p in snapshot.patterns)
        assert abs(total - sum(truth.values())) <= 0.10 * sum(truth.values())
        # every 4th user:* key has a TTL; no other key has one
        users = found["user:*"]
        assert users.keys_with_ttl / users.sampled_key_count == pytest.approx(0.25, abs=0.05)
        assert found["cache:page:*"].keys_with_ttl == 0
        assert found["queue:*:jobs"].types == {"list": found["queue:*:jobs"].sampled_key_count}

    async def test_size_buckets_and_largest_keys(
        self, memory_app_factory: AppFactory, loaded: RunningServer
    ):
        async with memory_app_factory(**target_of(loaded)) as app:
            snapshot = await run(app, budget_s=20)
        types = {b.type for b in snapshot.size_buckets}
        assert types == {"string", "hash", "list", "zset"}
        assert sum(b.sampled_keys for b in snapshot.size_buckets) == snapshot.sampled_keys
        assert sum(b.keys for b in snapshot.size_buckets) == pytest.approx(100_000, rel=0.01)
        largest = snapshot.largest_keys
        assert len(largest) == 20
        assert [k.memory_bytes for k in largest] == sorted(
            (k.memory_bytes for k in largest), reverse=True
        )
        with loaded.client(decode_responses=False) as client:
            top = largest[0]
            assert client.memory_usage(top.key) == top.memory_bytes
        # the largest are cache pages (strings of 200-499 bytes): STRLEN is their cardinality
        assert top.type == "string"
        assert top.cardinality is not None
        assert top.cardinality >= 200

    async def test_a_run_paces_itself(self, memory_app_factory: AppFactory, loaded: RunningServer):
        async with memory_app_factory(**target_of(loaded)) as app:
            snapshot = await run(app, budget_s=20)
        # at least PACE_FACTOR x the busy time, and at least 1 ms per round trip
        busy_ms = snapshot.duration_ms - snapshot.paused_ms
        assert snapshot.paused_ms >= 2 * busy_ms * 0.5
        assert snapshot.paused_ms >= 60  # ~10 SCANs and 50 pipelines, 1 ms each at least


class TestCursor:
    async def test_a_restarted_service_resumes_from_the_stored_cursor(
        self, fresh, persistent_storage: dict[str, Any]
    ):
        server = fresh("valkey")
        load(server, 1_000)  # 5,000 keys
        settings = {
            **target_of(server),
            **persistent_storage,
            "KEY_ANALYTICS_SAMPLE_SIZE": 1_000,
            "KEY_ANALYTICS_SCAN_BATCH_SIZE": 100,
        }
        async with running_app(make_settings(**settings)) as app:
            first = await run(app)
        assert first.started_cursor == "0"
        assert first.next_cursor != "0"
        assert not first.complete or first.sampled_keys == 1_000
        async with running_app(make_settings(**settings)) as app:
            second = await run(app)
            stored = await analytics(app).latest_snapshot(await default_connection(app))
        assert second.started_cursor == first.next_cursor
        assert stored is not None
        assert stored.started_cursor == first.next_cursor

    async def test_a_run_from_zero_stops_when_the_keyspace_is_read_whole(
        self, fresh, memory_app_factory: AppFactory
    ):
        server = fresh("valkey")
        load(server, 100)  # 500 keys: under the sample size
        async with memory_app_factory(**target_of(server)) as app:
            snapshot = await run(app)
            again = await run(app)
        assert (snapshot.sampled_keys, snapshot.keyspace_keys) == (500, 500)
        assert snapshot.complete
        assert snapshot.next_cursor == "0"
        assert {p.key_count for p in snapshot.patterns} == {100}
        assert again.started_cursor == "0"
        assert again.sampled_keys == 500


class TestEngines:
    @pytest.mark.parametrize("kind", ["redis6", "redis7"])
    async def test_redis_runs_too(self, fresh, memory_app_factory: AppFactory, kind: str):
        server = fresh(kind)
        load(server, 100)
        async with memory_app_factory(**target_of(server)) as app:
            snapshot = await run(app)
        assert snapshot.keyspace_keys == 500
        assert {p.pattern for p in snapshot.patterns} == PATTERNS


class TestSource:
    async def test_reads_from_an_online_replica(self, fresh, memory_app_factory: AppFactory):
        primary = fresh("valkey")
        load(primary, 200)
        replica = fresh("valkey", replica_of=primary)
        with replica.client() as client:
            assert client.dbsize() == 1_000  # the factory waits for the initial sync
        async with memory_app_factory(**target_of(primary)) as app:
            snapshot = await run(app)
        assert snapshot.on_replica
        assert snapshot.source == f"{replica.host}:{replica.port}"
        assert snapshot.keyspace_keys == 1_000
        assert {p.pattern for p in snapshot.patterns} == PATTERNS

    async def test_no_replica_reads_the_server_itself(self, fresh, memory_app_factory: AppFactory):
        server = fresh("valkey")
        load(server, 10)
        async with memory_app_factory(**target_of(server)) as app:
            snapshot = await run(app)
        assert not snapshot.on_replica
        assert snapshot.source == f"{server.host}:{server.port}"


class TestHotKeys:
    async def test_lfu_policy_ranks_the_keys_read_most(self, fresh, memory_app_factory: AppFactory):
        # lfu-log-factor 0: every read counts. At the default (10) the counter grows by
        # chance past a few reads, and 200 reads against 50 sometimes came out level.
        server = fresh("valkey", config={"maxmemory-policy": "allkeys-lfu", "lfu-log-factor": "0"})
        load(server, 100)
        with server.client() as client:
            pipe = client.pipeline(transaction=False)
            for _ in range(200):
                pipe.get("user:7")
            for _ in range(50):
                pipe.get("user:8")
            pipe.execute()
        async with memory_app_factory(**target_of(server)) as app:
            snapshot = await run(app)
        assert snapshot.eviction_policy == "allkeys-lfu"
        assert snapshot.hot_keys_note is None
        assert [k.key for k in snapshot.hot_keys[:2]] == ["user:7", "user:8"]
        assert snapshot.hot_keys[0].freq is not None
        assert snapshot.hot_keys[0].freq > 5

    async def test_other_policies_say_why_there_are_none(
        self, fresh, memory_app_factory: AppFactory
    ):
        server = fresh("valkey")
        load(server, 10)
        async with memory_app_factory(**target_of(server)) as app:
            snapshot = await run(app)
        assert snapshot.hot_keys == ()
        assert snapshot.hot_keys_note is not None
        assert "maxmemory-policy is noeviction" in snapshot.hot_keys_note


class TestPushConnections:
    async def test_push_connections_are_never_scanned(self, api: RunningApp):
        made = await api.client.post(
            "/api/connections",
            json={"source": "push", "name": "edge", "host": "10.9.9.9", "port": 6391},
        )
        assert made.status_code == 201, made.text
        connection = await api.services.connections.get(made.json()["id"])
        with pytest.raises(NeedsLiveConnection):
            await analytics(api).run(connection)
        await api.features.supervisor.reconcile()
        assert api.features.supervisor.loops_of(connection.id) == {}
        polled = await default_connection(api)
        assert "key_analytics" in api.features.supervisor.loops_of(polled.id)
