"""SlowlogLength from the slowlog poll: SLOWLOG LEN, and a quiet refusal."""

from collections.abc import Iterator

import pytest

from svc_monitor.event_types.readings import MemoryReading, SlowlogLength
from tests.detection.helpers import BusWatcher
from tests.fixtures.app import AppFactory
from tests.fixtures.servers import RunningServer, ServerFactory
from tests.fixtures.waiting import eventually

FAST = {"ANOMALY_POLL_INTERVAL_MS": 100, "SLOWLOG_POLL_INTERVAL_MS": 100}
# Every command is slow, and the ring holds far more than a test adds.
LOGS_EVERYTHING = {"slowlog-log-slower-than": "0", "slowlog-max-len": "1024"}


@pytest.fixture(scope="module")
def logging_server(server_factory: ServerFactory) -> Iterator[RunningServer]:
    server = server_factory.start(
        "valkey",
        config=LOGS_EVERYTHING,
        acl_users=["watcher on >watcher-pw ~* &* +@all -slowlog|len"],
    )
    yield server
    server_factory.stop(server)


class TestSlowlogLength:
    async def test_length_grows_with_slow_commands(
        self, memory_app_factory: AppFactory, logging_server: RunningServer
    ):
        server = logging_server
        async with memory_app_factory(**FAST, DB_HOST=server.host, DB_PORT=server.port) as app:
            watcher = BusWatcher(app)
            before = (await watcher.wait_for(SlowlogLength)).length
            with server.client() as conn:
                for i in range(20):
                    conn.echo(f"slow {i}")
            grown = await watcher.next(SlowlogLength, lambda r: r.length >= before + 20)
        assert grown.length <= 1024

    async def test_refused_len_degrades_quietly_and_is_not_asked_again(
        self, memory_app_factory: AppFactory, logging_server: RunningServer
    ):
        server = logging_server
        with server.client() as conn:
            conn.acl_log_reset()
        async with memory_app_factory(
            **FAST,
            DB_HOST=server.host,
            DB_PORT=server.port,
            DB_USERNAME="watcher",
            DB_PASSWORD="watcher-pw",
        ) as app:
            watcher = BusWatcher(app)
            connection_id = (await watcher.wait_for(MemoryReading)).connection_id

            async def several_passes() -> bool:
                loop = app.features.supervisor.loops_of(connection_id).get("slowlog")
                return loop is not None and loop.ticks >= 5

            await eventually(several_passes)
            slowlog_loop = app.features.supervisor.loops_of(connection_id)["slowlog"]
            failures = slowlog_loop.failures
            entries = (await app.client.get("/api/slowlog-analytics/entries")).json()
        assert watcher.of(SlowlogLength) == []
        assert failures == 0
        assert entries  # SLOWLOG GET still works and is stored
        with server.client() as conn:
            denied = [e for e in conn.acl_log() if e["object"] == "slowlog|len"]
        assert [e["count"] for e in denied] == [1]
