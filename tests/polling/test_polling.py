"""The poll loops against real servers: history, up/down events, cadence, runtime intervals."""

import asyncio
import time
from collections.abc import AsyncIterator, Iterator, Sequence

import pytest

from svc_monitor.event_types.instance import InstanceDown, InstanceUp
from tests.fixtures.app import AppFactory, RunningApp
from tests.fixtures.servers import HOST, RunningServer, ServerFactory
from tests.fixtures.waiting import eventually

FAST = {
    "ANOMALY_POLL_INTERVAL_MS": 100,
    "HISTORY_SAMPLE_INTERVAL_MS": 100,
    "ENGINE_CONNECT_TIMEOUT_MS": 300,
    "ENGINE_COMMAND_TIMEOUT_MS": 300,
}


@pytest.fixture
def restartable(server_factory: ServerFactory) -> Iterator[list[RunningServer]]:
    """A Valkey a test can stop and start again on the same port; the list holds the
    running one (a restart gives it a new pid)."""
    current = [server_factory.start("valkey")]
    yield current
    server_factory.stop(current[0])


@pytest.fixture
async def fast_app(app_factory: AppFactory) -> AsyncIterator[RunningApp]:
    """Polling every 100 ms, on each storage backend."""
    async with app_factory(**FAST) as app:
        yield app


def instance_events(events: Sequence[object], connection_id: str) -> list[type]:
    return [
        type(e)
        for e in events
        # Readings (MemoryReading ...) are instance events too; only up/down count here.
        if isinstance(e, InstanceUp | InstanceDown) and e.connection_id == connection_id
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
        self,
        memory_app_factory: AppFactory,
        server_factory: ServerFactory,
        restartable: list[RunningServer],
    ):
        server = restartable[0]
        async with memory_app_factory(**FAST, DB_HOST=HOST, DB_PORT=server.port) as app:
            events = app.services.bus.subscribe("test")
            health = app.features.instance_health

            async def is_up() -> bool:
                return health.get("env-default").up is True

            async def is_down() -> bool:
                return health.get("env-default").up is False

            await eventually(is_up)
            server_factory.stop(server)
            await eventually(is_down)
            await asyncio.sleep(1.0)  # several failed polls: still one event
            restartable[0] = server_factory.start_again(server)
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
            supervisor, health = app.features.supervisor, app.features.instance_health

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
            supervisor = app.features.supervisor

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

    async def test_a_standalone_server_gets_no_cluster_passes(self, memory_app_factory: AppFactory):
        # The cluster poll has nothing to do on a standalone server: once the server is
        # detected, no pass is made or counted, though it shares the INFO cadence.
        async with memory_app_factory(**FAST) as app:
            polls = app.services.live_state.polls

            def passes(kind: str) -> int:
                return sum(n for (_, k, _), n in polls.passes.items() if k == kind)

            async def detected_and_polled() -> bool:
                return passes("info") >= 3

            await eventually(detected_and_polled)
            cluster_before, info_before = passes("cluster"), passes("info")

            async def ten_more_info_passes() -> bool:
                return passes("info") >= info_before + 10

            await eventually(ten_more_info_passes)
            assert passes("cluster") == cluster_before
            assert cluster_before <= 1  # at most the one before detection finished


class TestShutdown:
    async def test_stuck_connections_are_stopped_together_not_one_grace_each(
        self, memory_app_factory: AppFactory, server_factory: ServerFactory
    ):
        """Every pass hangs on a paused server (its deadline is far off), so each stop
        waits out the grace period before cancelling: together that is one grace period,
        one by one it was one per connection."""
        stuck = server_factory.start("valkey")
        slow = {"ENGINE_CONNECT_TIMEOUT_MS": 20_000, "ENGINE_COMMAND_TIMEOUT_MS": 20_000}
        app_context = memory_app_factory(**slow, DB_HOST=HOST, DB_PORT=stuck.port)
        app = await app_context.__aenter__()
        try:
            for n in range(3):
                created = await app.client.post(
                    "/api/connections", json={"name": f"n{n}", "host": HOST, "port": stuck.port}
                )
                assert created.status_code == 201
            supervisor = app.features.supervisor

            async def all_polled() -> bool:
                return len(supervisor.polled_connections()) == 4

            await eventually(all_polled)
            server_factory.pause(stuck)
            await asyncio.sleep(1.5)  # every connection's next INFO pass is now stuck
        finally:
            started = time.monotonic()
            await app_context.__aexit__(None, None, None)
            took = time.monotonic() - started
            server_factory.resume(stuck)
            server_factory.stop(stuck)
        # One grace period (2 s) and the rest of shutdown; one each would be 8 s.
        assert took < 5


class TestChangesAnnounced:
    async def test_adding_and_removing_a_connection_is_told_once_each(
        self, api: RunningApp, redis7_server: RunningServer
    ):
        """What the heap freezer (kit/heap_freeze.py) hangs on: a change of the polled set,
        and nothing while it stays the same."""
        supervisor = api.features.supervisor

        async def default_polled() -> bool:
            return len(supervisor.polled_connections()) == 1

        await eventually(default_polled)
        changes: list[int] = []
        supervisor.on_change(lambda: changes.append(len(supervisor.polled_connections())))
        created = await api.client.post(
            "/api/connections",
            json={"name": "r7", "host": redis7_server.host, "port": redis7_server.port},
        )
        assert created.status_code == 201

        async def added() -> bool:
            return changes == [2]

        await eventually(added)
        await supervisor.reconcile()  # nothing changed: nothing told
        assert changes == [2]
        deleted = await api.client.delete(f"/api/connections/{created.json()['id']}")
        assert deleted.status_code in (200, 204)

        async def removed() -> bool:
            return changes == [2, 1]

        await eventually(removed)
