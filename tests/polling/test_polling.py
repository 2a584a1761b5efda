"""The poll loops against real servers: history, up/down events, cadence, runtime intervals."""

import asyncio
import contextlib
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path

import pytest

from svc_monitor.events import InstanceDown, InstanceEvent, InstanceUp
from tests.fixtures.app import AppFactory, RunningApp
from tests.fixtures.servers import HOST, RunningServer, ServerFactory, binary_path

FAST = {
    "ANOMALY_POLL_INTERVAL_MS": 100,
    "HISTORY_SAMPLE_INTERVAL_MS": 100,
    "ENGINE_CONNECT_TIMEOUT_MS": 300,
    "ENGINE_COMMAND_TIMEOUT_MS": 300,
}


async def eventually(check, *, within: float = 5.0) -> None:
    deadline = time.monotonic() + within
    while True:
        if await check():
            return
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.05)


class RestartableValkey:
    """A valkey-server on a fixed port that a test can kill and start again."""

    def __init__(self, workdir: Path) -> None:
        with socket.socket() as s:
            s.bind((HOST, 0))
            self.port: int = s.getsockname()[1]
        self.workdir = workdir
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            [str(binary_path("valkey")), "--bind", HOST, "--port", str(self.port), "--save", "",
             "--appendonly", "no", "--dir", str(self.workdir)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection((HOST, self.port), 0.2):
                return
            time.sleep(0.02)
        raise RuntimeError("valkey did not start")

    def kill(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait(5)
            self.process = None


@pytest.fixture
def restartable(tmp_path: Path) -> Iterator[RestartableValkey]:
    server = RestartableValkey(tmp_path)
    server.start()
    yield server
    server.kill()


@pytest.fixture
async def fast_app(app_factory: AppFactory) -> AsyncIterator[RunningApp]:
    """Polling every 100 ms, on each storage backend."""
    async with app_factory(**FAST) as app:
        yield app


def instance_events(events: Sequence[object], connection_id: str) -> list[type]:
    return [
        type(e) for e in events if isinstance(e, InstanceEvent) and e.connection_id == connection_id
    ]


class TestInfoHistory:
    async def test_memory_snapshots_and_chart_points_accumulate(self, fast_app: RunningApp):
        async def enough() -> bool:
            rows = (await fast_app.client.get("/api/memory-analytics/snapshots")).json()
            return len(rows) >= 3

        await eventually(enough)
        rows = (await fast_app.client.get("/api/memory-analytics/snapshots")).json()
        assert all(r["usedMemory"] > 0 for r in rows)
        assert [r["capturedAt"] for r in rows] == sorted(r["capturedAt"] for r in rows)
        series = (await fast_app.client.get("/api/metrics/history?maxPoints=2")).json()
        assert 1 <= len(series["points"]) <= 2
        assert sum(p["samples"] for p in series["points"]) >= 3
        assert series["points"][0]["usedMemory"] > 0

    async def test_time_window_and_paging(self, fast_app: RunningApp):
        async def enough() -> bool:
            rows = (await fast_app.client.get("/api/memory-analytics/snapshots")).json()
            return len(rows) >= 4

        await eventually(enough)
        rows = (await fast_app.client.get("/api/memory-analytics/snapshots")).json()
        second = rows[1]["capturedAt"]
        window = await fast_app.client.get(
            f"/api/memory-analytics/snapshots?from={second}&to={second}"
        )
        assert [r["capturedAt"] for r in window.json()] == [second]
        page = await fast_app.client.get("/api/memory-analytics/snapshots?limit=1&offset=1")
        assert [r["id"] for r in page.json()] == [rows[1]["id"]]

    async def test_bad_window_422s_naming_the_parameter(self, api: RunningApp):
        response = await api.client.get("/api/metrics/history?maxPoints=0")
        assert response.status_code == 422
        assert "maxPoints" in response.json()["fields"]

    async def test_live_info_reads_the_engine(self, api: RunningApp):
        body = (await api.client.get("/api/metrics/info?sections=server,memory")).json()
        assert set(body["sections"]) == {"server", "memory"}
        assert body["sections"]["server"]["valkey_version"].startswith("9.1.")


class TestUpAndDown:
    async def test_kill_gives_one_down_and_restart_one_up(
        self, memory_app_factory: AppFactory, restartable: RestartableValkey
    ):
        async with memory_app_factory(**FAST, DB_HOST=HOST, DB_PORT=restartable.port) as app:
            events = app.services.bus.subscribe("test")
            health = app.services.instance_health

            async def is_up() -> bool:
                return health.get("env-default").up is True

            async def is_down() -> bool:
                return health.get("env-default").up is False

            await eventually(is_up)
            restartable.kill()
            await eventually(is_down)
            await asyncio.sleep(1.0)  # several failed polls: still one event
            restartable.start()
            await eventually(is_up, within=40)  # reconnects back off, capped
            await asyncio.sleep(0.5)
        seen = instance_events(events.pending(), "env-default")
        assert seen == [InstanceUp, InstanceDown, InstanceUp]

    async def test_sigstop_is_detected_within_the_timeout_and_others_keep_cadence(
        self,
        memory_app_factory: AppFactory,
        server_factory: ServerFactory,
        valkey_server: RunningServer,
    ):
        stopped = server_factory.start("valkey")
        async with memory_app_factory(**FAST, DB_HOST=HOST, DB_PORT=stopped.port) as app:
            other = await app.client.post(
                "/api/connections", json={"name": "other", "host": HOST, "port": valkey_server.port}
            )
            other_id = other.json()["id"]
            supervisor, health = app.services.supervisor, app.services.instance_health

            async def both_polled() -> bool:
                return bool(supervisor.loops_of(other_id)) and health.get("env-default").up is True

            await eventually(both_polled)
            server_factory.pause(stopped)
            try:
                paused_at = time.monotonic()

                async def is_down() -> bool:
                    return health.get("env-default").up is False

                ticks_before = supervisor.loops_of(other_id)["info"].ticks
                await eventually(is_down, within=5)
                detected_after = time.monotonic() - paused_at
                await asyncio.sleep(2.0)
                ticks_during = supervisor.loops_of(other_id)["info"].ticks - ticks_before
                window = time.monotonic() - paused_at
            finally:
                server_factory.resume(stopped)
                server_factory.stop(stopped)
        # The deadline is connect + command timeout (0.6 s) plus one interval.
        assert detected_after < 0.6 + 0.1 + 0.5
        # The healthy connection kept polling every 100 ms meanwhile (allow scheduling slack).
        assert ticks_during >= 0.6 * window / 0.1


class TestRuntimeIntervals:
    async def test_put_settings_changes_the_info_interval_without_restart(
        self, memory_app_factory: AppFactory
    ):
        async with memory_app_factory(ANOMALY_POLL_INTERVAL_MS=5000) as app:
            supervisor = app.services.supervisor

            async def polling() -> bool:
                return bool(supervisor.loops_of("env-default"))

            await eventually(polling)
            loop = supervisor.loops_of("env-default")["info"]
            await asyncio.sleep(0.5)
            slow_ticks = loop.ticks
            await app.client.put("/api/settings", json={"anomalyPollIntervalMs": 50})
            await asyncio.sleep(1.0)
            fast_ticks = loop.ticks - slow_ticks
        assert slow_ticks <= 1
        assert fast_ticks >= 8


class TestIsolation:
    async def test_history_of_two_connections_never_mixes(
        self, fast_app: RunningApp, redis7_server: RunningServer
    ):
        other = await fast_app.client.post(
            "/api/connections", json={"name": "r7", "host": HOST, "port": redis7_server.port}
        )
        other_id = other.json()["id"]

        async def both_have_history() -> bool:
            for cid in ("env-default", other_id):
                rows = await fast_app.client.get(
                    "/api/memory-analytics/snapshots", headers={"X-Connection-Id": cid}
                )
                if not rows.json():
                    return False
            return True

        await eventually(both_have_history)
        mine = await fast_app.client.get("/api/memory-analytics/snapshots")
        theirs = await fast_app.client.get(
            "/api/memory-analytics/snapshots", headers={"X-Connection-Id": other_id}
        )
        assert not {r["id"] for r in mine.json()} & {r["id"] for r in theirs.json()}
        # The chart series of each covers exactly its own samples (same times as snapshots).
        for cid, rows in (("env-default", mine.json()), (other_id, theirs.json())):
            times = [r["capturedAt"] for r in rows]
            chart = await fast_app.client.get(
                f"/api/metrics/history?from={min(times)}&to={max(times)}",
                headers={"X-Connection-Id": cid},
            )
            assert chart.json()["connectionId"] == cid
            assert sum(p["samples"] for p in chart.json()["points"]) == len(rows)


class TestMonitorLoad:
    async def test_ledger_counts_what_the_monitor_sends(self, memory_app_factory: AppFactory):
        async with memory_app_factory(**FAST) as app:

            async def polled_a_few_times() -> bool:
                body = (await app.client.get("/api/metrics/monitor-load")).json()
                info = [c for c in body["commands"] if c["command"] == "INFO"]
                return bool(info) and info[0]["calls"] >= 5

            await eventually(polled_a_few_times)
            body = (await app.client.get("/api/metrics/monitor-load")).json()
        info = next(c for c in body["commands"] if c["command"] == "INFO")
        assert info["errors"] == 0
        assert info["avgMs"] > 0
        assert body["totalCalls"] >= info["calls"]
        assert body["perMinute"] > 0
