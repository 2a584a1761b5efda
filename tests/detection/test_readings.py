"""Memory, clients and replication readings: from INFO text, and from real servers."""

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator

import pytest
import valkey

from svc_monitor.detection.readings import ReadingsDetector
from svc_monitor.engine.info import parse_info
from svc_monitor.event_types.readings import ClientsReading, MemoryReading, ReplicationReading
from svc_monitor.events import EventBus
from svc_monitor.pipe.observation import Observation
from tests.detection.helpers import BusWatcher
from tests.fixtures.app import AppFactory, RunningApp
from tests.fixtures.servers import RunningServer, ServerFactory

FAST = {"ANOMALY_POLL_INTERVAL_MS": 50, "HISTORY_SAMPLE_INTERVAL_MS": 60_000}


def observed(text: str, *, node: str | None = None) -> Observation:
    return Observation(
        connection_id="c1", received_at_ms=1, info=parse_info(text.replace("\n", "\r\n")), node=node
    )


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def bus() -> EventBus:
    return EventBus()


class TestReadingsFromInfo:
    def test_memory_reading_needs_both_fields(self, bus: EventBus):
        watcher = bus.subscribe("t")
        detector = ReadingsDetector(bus)
        detector.observe(observed("# Memory\nused_memory:900\n"))  # pushed: no maxmemory
        detector.observe(
            observed("# Memory\nused_memory:900\nmaxmemory:1000\nmaxmemory_policy:noeviction\n")
        )
        readings = [e for e in watcher.pending() if isinstance(e, MemoryReading)]
        assert [(r.used_memory, r.maxmemory, r.maxmemory_policy) for r in readings] == [
            (900, 1000, "noeviction")
        ]

    def test_cluster_nodes_publish_nothing(self, bus: EventBus):
        watcher = bus.subscribe("t")
        ReadingsDetector(bus).observe(
            observed("# Memory\nused_memory:9\nmaxmemory:10\n", node="127.0.0.1:7001")
        )
        assert watcher.pending() == []

    def test_spike_level_appears_after_thirty_samples(self, bus: EventBus):
        watcher = bus.subscribe("t")
        detector = ReadingsDetector(bus)
        for _ in range(31):
            detector.observe(observed("# Clients\nconnected_clients:10\n"))
        readings = [e for e in watcher.pending() if isinstance(e, ClientsReading)]
        assert [r.spike_level for r in readings[:30]] == [None] * 30
        assert (readings[30].baseline, readings[30].spike_level) == (10, 20)
        assert readings[30].maxclients is None  # absent from this INFO: not invented

    def test_forget_starts_the_baseline_again(self, bus: EventBus):
        watcher = bus.subscribe("t")
        detector = ReadingsDetector(bus)
        for _ in range(30):
            detector.observe(observed("# Clients\nconnected_clients:10\n"))
        detector.forget("c1")
        detector.observe(observed("# Clients\nconnected_clients:10\n"))
        last = [e for e in watcher.pending() if isinstance(e, ClientsReading)][-1]
        assert last.spike_level is None

    def test_replica_lag_while_up_and_down(self, bus: EventBus):
        watcher = bus.subscribe("t")
        clock = _Clock()
        detector = ReadingsDetector(bus, clock=clock)
        replica = "# Replication\nrole:slave\nmaster_link_status:{}\n{}\n"
        detector.observe(observed(replica.format("up", "master_last_io_seconds_ago:3")))
        detector.observe(observed(replica.format("down", "master_link_down_since_seconds:42")))
        # An old server that never linked says -1: count from when we first saw it down.
        detector.observe(observed(replica.format("down", "master_link_down_since_seconds:-1")))
        clock.now += 7
        detector.observe(observed(replica.format("down", "master_link_down_since_seconds:-1")))
        readings = [e for e in watcher.pending() if isinstance(e, ReplicationReading)]
        assert [(r.master_link_status, r.lag_seconds) for r in readings] == [
            ("up", 3),
            ("down", 42),
            ("down", 0),
            ("down", 7),
        ]

    def test_primary_reports_its_slowest_replica(self, bus: EventBus):
        watcher = bus.subscribe("t")
        detector = ReadingsDetector(bus)
        detector.observe(
            observed(
                "# Replication\nrole:master\nconnected_slaves:2\n"
                "slave0:ip=127.0.0.1,port=7001,state=online,offset=10,lag=1\n"
                "slave1:ip=127.0.0.1,port=7002,state=online,offset=8,lag=4\n"
            )
        )
        detector.observe(observed("# Replication\nrole:master\nconnected_slaves:0\n"))
        readings = [e for e in watcher.pending() if isinstance(e, ReplicationReading)]
        assert [(r.master_link_status, r.lag_seconds) for r in readings] == [("primary", 4)]


@pytest.fixture(scope="module")
def small(server_factory: ServerFactory) -> Iterator[RunningServer]:
    """2 MB of memory and at most 64 clients, filled by the tests of this module only."""
    server = server_factory.start(
        "valkey",
        config={"maxmemory": "2mb", "maxmemory-policy": "noeviction", "maxclients": "64"},
    )
    yield server
    server_factory.stop(server)


@pytest.fixture
async def small_app(
    memory_app_factory: AppFactory, small: RunningServer
) -> AsyncIterator[RunningApp]:
    async with memory_app_factory(**FAST, DB_HOST=small.host, DB_PORT=small.port) as app:
        yield app


def fill(server: RunningServer) -> None:
    """Write 16 KB values until the server refuses for lack of memory (bounded)."""
    with server.client() as conn:
        for i in range(1000):
            try:
                conn.set(f"fill:{i}", "x" * 16384)
            except valkey.exceptions.OutOfMemoryError:
                return
    raise AssertionError("a 2 MB server took 16 MB without refusing")


class TestMemoryReading:
    async def test_full_server_reads_over_ninety_percent(
        self, small_app: RunningApp, small: RunningServer
    ):
        watcher = BusWatcher(small_app)
        try:
            await asyncio.to_thread(fill, small)
            reading = await watcher.next(MemoryReading, lambda r: r.used_memory > 0.9 * r.maxmemory)
        finally:
            with small.client() as conn:
                conn.flushall()
        assert reading.maxmemory == 2 * 1024 * 1024
        assert reading.maxmemory_policy == "noeviction"

    async def test_unlimited_server_reads_maxmemory_zero(self, memory_app_factory: AppFactory):
        async with memory_app_factory(**FAST) as app:
            reading = await BusWatcher(app).wait_for(MemoryReading)
        assert reading.maxmemory == 0
        assert reading.used_memory > 0


class TestClientsReading:
    async def test_counts_clients_a_user_opens_and_closes(
        self, small_app: RunningApp, small: RunningServer
    ):
        watcher = BusWatcher(small_app)
        before = (await watcher.wait_for(ClientsReading)).connected_clients
        with contextlib.ExitStack() as stack:
            for _ in range(5):
                stack.enter_context(small.client()).ping()
            opened = await watcher.next(ClientsReading, lambda r: r.connected_clients >= before + 5)
        closed = await watcher.next(
            ClientsReading, lambda r: r.connected_clients <= opened.connected_clients - 5
        )
        assert opened.maxclients == 64
        assert closed.connected_clients < opened.connected_clients

    async def test_automatic_spike_level_appears_after_enough_polls(self, small_app: RunningApp):
        watcher = BusWatcher(small_app)
        # 30 samples at 50 ms: about 1.5 s.
        reading = await watcher.wait_for(ClientsReading, lambda r: r.spike_level is not None)
        assert len(watcher.of(ClientsReading)) >= 31
        assert reading.baseline is not None
        assert reading.spike_level is not None
        assert reading.spike_level >= reading.baseline + 10


@pytest.fixture(scope="module")
def pair(server_factory: ServerFactory) -> Iterator[tuple[RunningServer, RunningServer]]:
    """A primary that pings its replica every second, so an idle link reads 0-1 s."""
    primary = server_factory.start("valkey", config={"repl-ping-replica-period": "1"})
    replica = server_factory.start("valkey", replica_of=primary)
    yield primary, replica
    server_factory.stop(replica)
    server_factory.stop(primary)


class TestReplicationReading:
    async def test_primary_reports_its_replica_lag(
        self, memory_app_factory: AppFactory, pair: tuple[RunningServer, RunningServer]
    ):
        primary, _ = pair
        async with memory_app_factory(**FAST, DB_HOST=primary.host, DB_PORT=primary.port) as app:
            reading = await BusWatcher(app).wait_for(ReplicationReading)
        assert reading.master_link_status == "primary"
        assert reading.lag_seconds <= 2

    async def test_replica_lag_grows_while_its_primary_is_stopped(
        self,
        memory_app_factory: AppFactory,
        server_factory: ServerFactory,
        pair: tuple[RunningServer, RunningServer],
    ):
        primary, replica = pair
        async with memory_app_factory(**FAST, DB_HOST=replica.host, DB_PORT=replica.port) as app:
            watcher = BusWatcher(app)
            idle = await watcher.wait_for(ReplicationReading)
            assert (idle.master_link_status, idle.lag_seconds <= 2) == ("up", True)
            server_factory.pause(primary)
            try:
                behind = await watcher.next(ReplicationReading, lambda r: r.lag_seconds >= 3)
            finally:
                server_factory.resume(primary)
            assert behind.master_link_status == "up"  # repl-timeout (60 s) not reached
            caught_up = await watcher.next(ReplicationReading, lambda r: r.lag_seconds <= 1)
        assert caught_up.master_link_status == "up"
