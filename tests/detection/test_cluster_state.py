"""ClusterStateChanged: from CLUSTER INFO fields, and from a real three-node cluster."""

import pytest

from svc_monitor.detection.cluster_state import ClusterStateDetector
from svc_monitor.event_types.cluster import ClusterStateChanged
from svc_monitor.events import EventBus
from tests.detection.helpers import BusWatcher
from tests.fixtures.app import AppFactory
from tests.fixtures.servers import CLUSTER_SLOTS, RunningServer
from tests.fixtures.waiting import eventually

FAST = {"ANOMALY_POLL_INTERVAL_MS": 100, "HISTORY_SAMPLE_INTERVAL_MS": 60_000}


def cluster_info(state: str, *, failed: int = 0, assigned: int = 16384) -> dict[str, int | str]:
    return {
        "cluster_state": state,
        "cluster_slots_assigned": assigned,
        "cluster_slots_fail": failed,
        "cluster_known_nodes": 3,
    }


class TestClusterStateFromClusterInfo:
    def test_first_read_and_unchanged_reads_publish_nothing(self):
        bus = EventBus()
        watcher = bus.subscribe("t")
        detector = ClusterStateDetector(bus)
        detector.observe("c1", cluster_info("fail", failed=10), at_ms=1)
        detector.observe("c1", cluster_info("fail", failed=10), at_ms=2)
        assert watcher.pending() == []

    def test_state_and_failed_slot_changes_each_publish_once(self):
        bus = EventBus()
        watcher = bus.subscribe("t")
        detector = ClusterStateDetector(bus)
        detector.observe("c1", cluster_info("ok"), at_ms=1)
        detector.observe("c1", cluster_info("ok", failed=5), at_ms=2)
        detector.observe("c1", cluster_info("fail", failed=5), at_ms=3)
        detector.observe("c1", cluster_info("fail", failed=5), at_ms=4)
        events = watcher.pending()
        assert [
            (e.previous_state, e.state, e.previous_slots_failed, e.slots_failed)
            for e in events
            if isinstance(e, ClusterStateChanged)
        ] == [("ok", "ok", 0, 5), ("ok", "fail", 5, 5)]

    def test_forget_makes_the_next_read_a_first_read(self):
        bus = EventBus()
        watcher = bus.subscribe("t")
        detector = ClusterStateDetector(bus)
        detector.observe("c1", cluster_info("ok"), at_ms=1)
        detector.forget("c1")
        detector.observe("c1", cluster_info("fail"), at_ms=2)
        assert watcher.pending() == []


@pytest.fixture(scope="module")
def cluster(valkey_cluster: list[RunningServer]) -> list[RunningServer]:
    return valkey_cluster


class TestClusterStateFromARealCluster:
    async def test_losing_and_regaining_slot_coverage(
        self, memory_app_factory: AppFactory, cluster: list[RunningServer]
    ):
        seed = cluster[0]
        first, last = 0, CLUSTER_SLOTS // 3 - 1  # the seed's slots (servers.py splits evenly)
        async with memory_app_factory(**FAST, DB_HOST=seed.host, DB_PORT=seed.port) as app:
            watcher = BusWatcher(app)

            async def all_polled() -> bool:
                # Node INFO is read after CLUSTER INFO in a pass: the first read is done.
                response = await app.client.get("/api/metrics/cluster/node-stats")
                nodes = response.json() if response.status_code == 200 else []
                return len(nodes) == 3 and all(n["status"] == "up" for n in nodes)

            await eventually(all_polled)
            with seed.client() as conn:
                conn.execute_command("CLUSTER", "DELSLOTSRANGE", first, last)
                try:
                    failed = await watcher.wait_for(ClusterStateChanged, within=5)
                finally:
                    conn.execute_command("CLUSTER", "ADDSLOTSRANGE", first, last)
            recovered = await watcher.next(ClusterStateChanged, within=5)
        assert (failed.previous_state, failed.state) == ("ok", "fail")
        assert failed.slots_assigned == CLUSTER_SLOTS - (last - first + 1)
        assert (failed.known_nodes, failed.slots_failed, failed.previous_slots_failed) == (3, 0, 0)
        assert (recovered.previous_state, recovered.state) == ("fail", "ok")
        assert recovered.slots_assigned == CLUSTER_SLOTS
        assert len(watcher.of(ClusterStateChanged)) == 2

    async def test_refused_cluster_info_degrades_quietly_and_is_not_asked_again(
        self, memory_app_factory: AppFactory, cluster: list[RunningServer]
    ):
        for node in cluster:
            with node.client() as conn:
                conn.execute_command(
                    "ACL",
                    "SETUSER",
                    "no-cluster-info",
                    "on",
                    ">pw",
                    "~*",
                    "&*",
                    "+@all",
                    "-cluster|info",
                )
                conn.acl_log_reset()
        seed = cluster[1]
        async with memory_app_factory(
            **FAST,
            DB_HOST=seed.host,
            DB_PORT=seed.port,
            DB_USERNAME="no-cluster-info",
            DB_PASSWORD="pw",
        ) as app:
            watcher = BusWatcher(app)

            async def polled_a_few_times() -> bool:
                loops = app.features.supervisor.loops_of("env-default")
                return "cluster" in loops and loops["cluster"].ticks >= 5

            await eventually(polled_a_few_times)
            nodes = (await app.client.get("/api/metrics/cluster/node-stats")).json()
            failures = app.features.supervisor.loops_of("env-default")["cluster"].failures
        assert failures == 0
        assert len(nodes) == 3  # the nodes are still discovered and polled
        assert watcher.of(ClusterStateChanged) == []
        with seed.client() as conn:
            denied = [e for e in conn.acl_log() if e["object"] == "cluster|info"]
        assert [e["count"] for e in denied] == [1]
