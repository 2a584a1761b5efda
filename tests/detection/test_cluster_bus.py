"""ClusterBusCorruption: from recorded CLUSTER INFO replies (with a corruption counter
added the way builds that report one do), and never from a real cluster."""

from pathlib import Path

import pytest
from valkey.cluster import ValkeyCluster

from svc_monitor.detection.cluster_bus import corruption_counters
from svc_monitor.detection.cluster_state import ClusterStateDetector
from svc_monitor.engine.cluster import parse_cluster_info
from svc_monitor.event_types.cluster import ClusterBusCorruption, ClusterStateChanged
from svc_monitor.events import EventBus
from tests.detection.helpers import BusWatcher
from tests.fixtures.app import AppFactory
from tests.fixtures.servers import CLUSTER_SLOTS, RunningServer
from tests.fixtures.waiting import eventually

REPLIES = Path(__file__).resolve().parents[1] / "engine" / "replies"
VALKEY = (REPLIES / "valkey-9.1" / "cluster_info.txt").read_bytes()
REDIS = (REPLIES / "redis-7.0" / "cluster_info.txt").read_bytes()
CRC = "cluster_stats_messages_crc_mismatch"
FAST = {"ANOMALY_POLL_INTERVAL_MS": 100, "HISTORY_SAMPLE_INTERVAL_MS": 60_000}


def reply(
    counters: dict[str, int] | None = None, *, recorded: bytes = VALKEY
) -> dict[str, int | str]:
    """The recorded reply, with extra `name:value` lines as a build reporting them sends."""
    extra = "".join(f"{name}:{value}\r\n" for name, value in (counters or {}).items())
    return parse_cluster_info(recorded + extra.encode())


class Reads:
    def __init__(self) -> None:
        self.bus = EventBus()
        self.subscription = self.bus.subscribe("test")
        self.detector = ClusterStateDetector(self.bus)  # where ClusterService feeds them

    def read(self, info: dict[str, int | str], *, at_ms: int = 1, connection: str = "c1") -> None:
        self.detector.observe(connection, info, at_ms=at_ms)

    def fired(self) -> list[ClusterBusCorruption]:
        return [e for e in self.subscription.pending() if isinstance(e, ClusterBusCorruption)]


class TestCorruptionCounters:
    @pytest.mark.parametrize("recorded", [VALKEY, REDIS], ids=["valkey-9.1", "redis-7.0"])
    def test_stock_engines_report_none(self, recorded: bytes):
        info = parse_cluster_info(recorded)
        assert info["cluster_state"] == "ok"
        assert corruption_counters(info) == {}

    def test_names_mentioning_crc_checksum_corrupt_or_invalid_count(self):
        counters = {
            CRC: 2,
            "cluster_bus_checksum_errors": 1,
            "corrupted_msgs": 0,
            "INVALID_Frames": 4,
        }
        assert corruption_counters(reply(counters)) == counters


class TestClusterBusCorruptionFromClusterInfo:
    def test_first_read_is_the_baseline(self):
        reads = Reads()
        reads.read(reply({CRC: 7}))
        assert reads.fired() == []

    def test_an_increase_fires_once_with_names_and_increases(self):
        reads = Reads()
        reads.read(reply({CRC: 7}), at_ms=1)
        reads.read(reply({CRC: 10}), at_ms=2)
        reads.read(reply({CRC: 10}), at_ms=3)
        [event] = reads.fired()
        assert event.connection_id == "c1"
        assert event.at_ms == 2
        assert event.increases == {CRC: 3}
        assert event.totals == {CRC: 10}
        assert (event.state, event.known_nodes) == ("ok", 3)

    def test_a_counter_appearing_after_the_baseline_counts_from_zero(self):
        # Valkey and Redis list a per-type message counter only once it is non-zero.
        reads = Reads()
        reads.read(reply())
        reads.read(reply({CRC: 2}))
        assert [e.increases for e in reads.fired()] == [{CRC: 2}]

    def test_unchanged_counters_publish_nothing(self):
        reads = Reads()
        for _ in range(3):
            reads.read(reply({CRC: 5}))
        assert reads.fired() == []

    def test_a_reset_sets_a_new_baseline_without_firing(self):
        reads = Reads()
        reads.read(reply({CRC: 50}))
        reads.read(reply({CRC: 4}))  # the node restarted
        reads.read(reply())  # CONFIG RESETSTAT: the counter is gone again
        assert reads.fired() == []
        reads.read(reply({CRC: 1}))
        assert [e.increases for e in reads.fired()] == [{CRC: 1}]

    def test_only_the_counters_that_grew_are_named(self):
        reads = Reads()
        reads.read(reply({CRC: 1, "cluster_stats_messages_invalid_received": 9}))
        reads.read(reply({CRC: 4, "cluster_stats_messages_invalid_received": 9}))
        [event] = reads.fired()
        assert event.increases == {CRC: 3}
        assert event.totals == {CRC: 4, "cluster_stats_messages_invalid_received": 9}

    def test_message_counters_moving_is_not_corruption(self):
        reads = Reads()
        reads.read(reply(recorded=REDIS))
        busier = REDIS.replace(b"messages_received:14", b"messages_received:999").replace(
            b"total_cluster_links_buffer_limit_exceeded:0",
            b"total_cluster_links_buffer_limit_exceeded:3",
        )
        assert busier != REDIS
        reads.read(parse_cluster_info(busier))
        assert reads.fired() == []

    def test_connections_are_compared_separately(self):
        reads = Reads()
        reads.read(reply({CRC: 1}), connection="c1")
        reads.read(reply({CRC: 9}), connection="c2")
        assert reads.fired() == []

    def test_forget_makes_the_next_read_a_baseline(self):
        reads = Reads()
        reads.read(reply({CRC: 1}))
        reads.detector.forget("c1")
        reads.read(reply({CRC: 9}))
        assert reads.fired() == []

    def test_a_reply_that_is_not_a_cluster_node_s_changes_nothing(self):
        reads = Reads()
        reads.read(reply({CRC: 1}))
        reads.read({CRC: 5})  # no cluster_state: not CLUSTER INFO of a node
        reads.read(reply({CRC: 1}))
        assert reads.fired() == []


@pytest.fixture(scope="module")
def cluster(valkey_cluster: list[RunningServer]) -> list[RunningServer]:
    return valkey_cluster


class TestARealCluster:
    async def test_a_working_cluster_under_load_and_a_slot_change_never_fires(
        self, memory_app_factory: AppFactory, cluster: list[RunningServer]
    ):
        seed = cluster[0]
        last = CLUSTER_SLOTS // 3 - 1  # the seed's slots
        async with memory_app_factory(**FAST, DB_HOST=seed.host, DB_PORT=seed.port) as app:
            watcher = BusWatcher(app)
            loops = app.features.supervisor.loops_of

            async def cluster_passes(at_least: int) -> bool:
                loop = loops("env-default").get("cluster")
                return loop is not None and loop.ticks >= at_least

            await eventually(lambda: cluster_passes(3))
            with ValkeyCluster(host=seed.host, port=seed.port) as client:
                for i in range(300):  # keys on every node: redirects and bus pings under load
                    client.set(f"bus:{i}", "x")
            # Bus traffic beyond pings: slots leave and return (UPDATE messages, epochs).
            with seed.client() as conn:
                conn.execute_command("CLUSTER", "DELSLOTSRANGE", 0, last)
                try:
                    await watcher.wait_for(ClusterStateChanged, within=5)
                finally:
                    conn.execute_command("CLUSTER", "ADDSLOTSRANGE", 0, last)
            await watcher.next(ClusterStateChanged, within=5)
            passes = loops("env-default")["cluster"].ticks
            await eventually(lambda: cluster_passes(passes + 5))
        assert watcher.of(ClusterBusCorruption) == []
