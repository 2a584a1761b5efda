"""Cluster routes against a real three-node Valkey 9.1 cluster, and the CLUSTER NODES parser."""

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from svc_monitor.engine.cluster import parse_cluster_nodes, parse_slot_stats
from tests.fixtures.app import AppFactory, RunningApp
from tests.fixtures.servers import RunningServer, ServerFactory


@pytest.fixture(scope="module")
def cluster(server_factory: ServerFactory) -> Iterator[list[RunningServer]]:
    nodes = server_factory.cluster("valkey")
    yield nodes
    for node in reversed(nodes):
        server_factory.stop(node)


@pytest.fixture(scope="module")
def filled_slots(cluster: list[RunningServer]) -> dict[int, int]:
    """Keys written to three slots of the first node: slot -> key count (3, 2, 1)."""
    counts: dict[int, int] = {}
    with cluster[0].client() as conn:
        tags = [t for t in (f"t{i}" for i in range(200)) if conn.cluster("KEYSLOT", t) <= 5460]
        for tag, count in zip(tags, (3, 2, 1), strict=False):
            for index in range(count):
                conn.set(f"{{{tag}}}:{index}", "v")
            counts[conn.cluster("KEYSLOT", tag)] = count
    return counts


@pytest.fixture
async def app(
    memory_app_factory: AppFactory, cluster: list[RunningServer]
) -> AsyncIterator[RunningApp]:
    async with memory_app_factory(DB_HOST=cluster[0].host, DB_PORT=cluster[0].port) as running:
        yield running


async def ok(app: RunningApp, url: str) -> Any:
    response = await app.client.get(url)
    assert response.status_code == 200, response.text
    return response.json()


class TestClusterRoutes:
    async def test_info(self, app: RunningApp):
        info = await ok(app, "/api/metrics/cluster/info")
        assert info["cluster_state"] == "ok"
        assert info["cluster_known_nodes"] == 3
        assert info["cluster_slots_assigned"] == 16384

    async def test_nodes_cover_every_slot(self, app: RunningApp, cluster: list[RunningServer]):
        nodes = await ok(app, "/api/metrics/cluster/nodes")
        assert sorted(n["port"] for n in nodes) == sorted(s.port for s in cluster)
        myself = next(n for n in nodes if "myself" in n["flags"])
        assert myself["address"] == f"{cluster[0].host}:{cluster[0].port}"
        assert myself["busPort"] == cluster[0].port + 10000
        assert all("master" in n["flags"] and n["linkState"] == "connected" for n in nodes)
        assert sum(end - start + 1 for n in nodes for start, end in n["slots"]) == 16384

    async def test_migrating_slot_is_shown(self, app: RunningApp, cluster: list[RunningServer]):
        nodes = await ok(app, "/api/metrics/cluster/nodes")
        target = next(n["id"] for n in nodes if "myself" not in n["flags"])
        with cluster[0].client() as conn:
            conn.execute_command("CLUSTER", "SETSLOT", 7, "MIGRATING", target)
            try:
                nodes = await ok(app, "/api/metrics/cluster/nodes")
            finally:
                conn.execute_command("CLUSTER", "SETSLOT", 7, "STABLE")
        myself = next(n for n in nodes if "myself" in n["flags"])
        assert myself["migratingSlots"] == [{"slot": 7, "nodeId": target}]

    async def test_slot_stats_ordered_by_key_count(
        self, app: RunningApp, filled_slots: dict[int, int]
    ):
        stats = await ok(app, "/api/metrics/cluster/slot-stats?limit=2")
        top = sorted(filled_slots, key=lambda s: -filled_slots[s])[:2]
        assert list(stats) == [str(s) for s in top]  # object keys in key-count order
        assert [v["key_count"] for v in stats.values()] == [3, 2]
        # Without cluster-slot-stats-enabled Valkey reports key-count alone: the rest is
        # unknown (null), not a count of 0.
        assert stats[str(top[0])] == {
            "key_count": 3,
            "expires_count": None,
            "total_reads": None,
            "total_writes": None,
            "cpu_usec": None,
        }
        default = await ok(app, "/api/metrics/cluster/slot-stats")
        assert len(default) == 100

    async def test_slot_stats_with_the_server_setting_report_cpu_time(
        self, app: RunningApp, cluster: list[RunningServer], filled_slots: dict[int, int]
    ):
        def enable(value: str) -> None:
            for node in cluster:
                with node.client() as conn:
                    conn.config_set("cluster-slot-stats-enabled", value)

        enable("yes")
        try:
            top = max(filled_slots, key=lambda s: filled_slots[s])
            with cluster[0].client() as conn:  # commands on the slot, counted from now on
                for key in conn.execute_command("CLUSTER", "GETKEYSINSLOT", top, 10):
                    conn.get(key)
            stats = await ok(app, "/api/metrics/cluster/slot-stats?orderBy=cpu-usec&limit=1")
        finally:
            enable("no")
        [(slot, record)] = stats.items()
        assert slot == str(top)
        assert record["key_count"] == filled_slots[top]
        assert record["cpu_usec"] > 0
        # Valkey 9.1 reports network bytes, not these, even when enabled: still unknown.
        assert record["expires_count"] is None
        assert record["total_reads"] is None
        assert record["total_writes"] is None

    async def test_cpu_usec_needs_the_server_setting(self, app: RunningApp):
        response = await app.client.get("/api/metrics/cluster/slot-stats?orderBy=cpu-usec")
        assert response.status_code == 409, response.text
        assert "cluster-slot-stats-enabled" in response.json()["message"]

    async def test_redis7_slot_stats_answers_501(
        self, server_factory: ServerFactory, memory_app_factory: AppFactory
    ):
        node = server_factory.start("redis7", cluster_enabled=True)
        try:
            async with memory_app_factory(DB_HOST=node.host, DB_PORT=node.port) as running:
                response = await running.client.get("/api/metrics/cluster/slot-stats")
                assert response.status_code == 501, response.text
                assert (
                    "CLUSTER SLOT-STATS is not supported on this database version"
                    in (response.json()["message"])
                )
                info = await ok(running, "/api/metrics/cluster/info")
                assert info["cluster_known_nodes"] == 1
        finally:
            server_factory.stop(node)


class TestParsers:
    def test_hostname_replica_and_importing_marker(self):
        reply = (
            b"e7d1eec 10.0.0.2:6380@16380,cache-2.example,shard-id=ab replica 07c37df "
            b"0 1426238317239 4 connected\n"
            b"07c37df ::1:6379@16379 myself,master - 0 1426238316232 3 connected "
            b"0-100 200 [93-<-292f8b3] [94->-e7d1eec]\n"
            b"broken line\n"
        )
        replica, primary = parse_cluster_nodes(reply)
        assert (replica.host, replica.port, replica.hostname) == (
            "10.0.0.2",
            6380,
            "cache-2.example",
        )
        assert replica.master == "07c37df"
        assert replica.slots == []
        assert primary.address == "[::1]:6379"
        assert primary.slots == [(0, 100), (200, 200)]
        assert [(m.slot, m.node) for m in primary.importing] == [(93, "292f8b3")]
        assert [(m.slot, m.node) for m in primary.migrating] == [(94, "e7d1eec")]

    def test_slot_stats_keep_server_order_and_skip_junk(self):
        reply = [[9, [b"key-count", 4, b"cpu-usec", 7]], [2, [b"key-count", 1]], [b"x"], "junk"]
        stats = parse_slot_stats(reply)
        assert [(s.slot, s.key_count, s.cpu_usec) for s in stats] == [(9, 4, 7), (2, 1, None)]
