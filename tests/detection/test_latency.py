"""LatencyReading: mean time per call between two commandstats reads."""

import asyncio
from collections.abc import Iterator

import pytest

from svc_monitor.detection.command_latency import LatencyDetector
from svc_monitor.engine.info import parse_info
from svc_monitor.event_types.readings import LatencyReading
from svc_monitor.events import EventBus
from tests.detection.helpers import BusWatcher
from tests.fixtures.app import AppFactory
from tests.fixtures.servers import RunningServer, ServerFactory

# Valkey's Lua has os.clock() (Redis's sandbox does not): a busy loop of 100 ms of CPU
# that makes no calls of its own, so it adds one slow call and nothing else.
BUSY_100_MS = "local s = os.clock() while os.clock() - s < 0.1 do end return 1"


def commandstats(**commands: tuple[int, int]) -> str:
    lines = [
        f"cmdstat_{name}:calls={calls},usec={usec}" for name, (calls, usec) in commands.items()
    ]
    return "# Commandstats\r\n" + "\r\n".join(lines) + "\r\n"


class TestLatencyFromCommandstats:
    def test_mean_over_all_commands_between_two_reads(self):
        bus = EventBus()
        watcher = bus.subscribe("t")
        detector = LatencyDetector(bus)
        detector.record("c1", parse_info(commandstats(get=(10, 100), set=(5, 50))), at_ms=1)
        detector.record("c1", parse_info(commandstats(get=(20, 200), set=(15, 4050))), at_ms=2)
        (reading,) = watcher.pending()
        assert isinstance(reading, LatencyReading)
        # (100 + 4000) usec over 20 calls.
        assert reading.latency_ms == pytest.approx(0.205)
        assert (reading.baseline_ms, reading.spike_level_ms) == (None, None)

    def test_no_reading_without_calls_or_after_a_reset(self):
        bus = EventBus()
        watcher = bus.subscribe("t")
        detector = LatencyDetector(bus)
        detector.record("c1", parse_info(commandstats(get=(10, 100))), at_ms=1)
        detector.record("c1", parse_info(commandstats(get=(10, 100))), at_ms=2)  # no calls
        detector.record("c1", parse_info(commandstats(get=(2, 10))), at_ms=3)  # RESETSTAT
        assert watcher.pending() == []
        detector.record("c1", parse_info(commandstats(get=(4, 30))), at_ms=4)
        (reading,) = watcher.pending()
        assert isinstance(reading, LatencyReading)
        assert reading.latency_ms == pytest.approx(0.01)

    def test_a_pushed_instance_without_commandstats_reads_nothing(self):
        bus = EventBus()
        watcher = bus.subscribe("t")
        detector = LatencyDetector(bus)
        for at in (1, 2):
            detector.record("c1", parse_info("# Memory\r\nused_memory:1\r\n"), at_ms=at)
        assert watcher.pending() == []


@pytest.fixture(scope="module")
def quiet(server_factory: ServerFactory) -> Iterator[RunningServer]:
    server = server_factory.start("valkey")
    yield server
    server_factory.stop(server)


class TestLatencyFromARealServer:
    async def test_slow_script_raises_the_reading(
        self, memory_app_factory: AppFactory, quiet: RunningServer
    ):
        async with memory_app_factory(
            COMMANDSTATS_POLL_INTERVAL_MS=100, DB_HOST=quiet.host, DB_PORT=quiet.port
        ) as app:
            watcher = BusWatcher(app)
            await watcher.wait_for(LatencyReading)
            calm = watcher.of(LatencyReading)
            with quiet.client() as conn:
                await asyncio.to_thread(conn.eval, BUSY_100_MS, 0)
            # Any reading since the calm one counts: the poll blocked behind the script can
            # publish its reading before this task resumes from the script's answer.
            slow = await watcher.wait_for(LatencyReading, lambda r: r.latency_ms >= 10)
        assert all(r.latency_ms < 5 for r in calm)
        # 100 ms shared with the few calls (the monitor's own) of one 100 ms interval.
        assert slow.latency_ms <= 100
