import asyncio
import statistics
import time
from collections.abc import Callable

import pytest

from svc_monitor.system.service import STORAGE_BUDGET_S
from tests.detection.helpers import person, run
from tests.fixtures.app import AppFactory, RunningApp, target_of
from tests.fixtures.busy_loop import busy_event_loop
from tests.fixtures.servers import RunningServer, ServerFactory
from tests.fixtures.waiting import eventually


async def _polled(app: RunningApp) -> bool:
    return app.services.live_state.latest("env-default") is not None


async def _pings(server: RunningServer) -> int:
    """PINGs the server has answered so far, by its own count."""
    client = person(server)
    try:
        stats = await run(client, "INFO", "commandstats")
    finally:
        await client.aclose()
    calls = stats.get("cmdstat_ping", {}).get("calls", 0)
    return int(calls)


class TestHealth:
    @pytest.mark.parametrize("path", ["/health", "/api/health"])
    async def test_reports_valkey_engine_with_capabilities(self, api: RunningApp, path: str):
        response = await api.client.get(path)
        assert response.status_code == 200
        body = response.json()
        assert body["status"] == "ok"
        assert body["storage"]["status"] == "ok"
        database = body["database"]
        assert database["status"] == "connected"
        assert database["type"] == "valkey"
        assert database["version"].startswith("9.1.")
        assert database["capabilities"]["hasCommandLog"] is True
        assert database["capabilities"]["hasSlotStats"] is True

    async def test_a_polled_server_is_not_pinged_for_each_health_check(
        self, memory_app_factory: AppFactory, server_factory: ServerFactory
    ):
        """The INFO poll answered a moment ago over a connection still open: that is the
        answer, and a load balancer probing every second sends the server nothing."""
        server = server_factory.start("valkey")
        try:
            async with memory_app_factory(**target_of(server)) as app:
                await eventually(lambda: _polled(app))
                before = await _pings(server)
                for _ in range(20):
                    body = (await app.client.get("/api/health")).json()
                    assert body["database"]["status"] == "connected"
                after = await _pings(server)
        finally:
            server_factory.stop(server)
        assert after == before

    async def test_engine_down_still_answers_200_with_the_error(
        self, memory_app_factory: AppFactory, server_factory: ServerFactory
    ):
        server = server_factory.start("redis7")
        async with memory_app_factory(DB_HOST=server.host, DB_PORT=server.port) as app:
            assert (await app.client.get("/api/health")).json()["database"]["status"] == (
                "connected"
            )
            server_factory.stop(server)
            response = await app.client.get("/api/health")
        assert response.status_code == 200
        body = response.json()
        assert body["status"] == "degraded"
        assert body["database"]["status"] == "disconnected"
        assert body["database"]["errorKind"] == "unreachable"
        assert body["database"]["error"]

    async def test_a_plain_valkey_reports_every_command_available(self, api: RunningApp):
        capabilities = (await api.client.get("/health")).json()["database"]["capabilities"]
        assert capabilities == dict.fromkeys(
            [
                "hasCommandLog",
                "hasSlotStats",
                "hasClusterSlotStats",
                "hasLatencyMonitor",
                "hasAclLog",
                "hasMemoryDoctor",
                "hasConfig",
                "hasSlowLog",
                "hasMonitor",
            ],
            True,
        )

    async def test_commands_a_provider_renamed_away_are_reported_missing(
        self, memory_app_factory: AppFactory, fresh: Callable[..., RunningServer]
    ):
        server = fresh(
            "valkey", config={"rename-command": ['CONFIG ""', 'SLOWLOG ""', 'MONITOR ""']}
        )
        async with memory_app_factory(DB_HOST=server.host, DB_PORT=server.port) as app:
            capabilities = (await app.client.get("/health")).json()["database"]["capabilities"]
        missing = {name for name, there in capabilities.items() if not there}
        assert missing == {"hasConfig", "hasSlowLog", "hasMonitor"}

    async def test_unknown_connection_id_404s_naming_it(self, api: RunningApp):
        response = await api.client.get("/api/health", headers={"X-Connection-Id": "nope-123"})
        assert response.status_code == 404
        assert "nope-123" in response.json()["message"]

    async def test_selects_the_connection_named_by_header(
        self, api: RunningApp, redis7_server: RunningServer
    ):
        created = await api.client.post(
            "/api/connections",
            json={"name": "r7", "host": redis7_server.host, "port": redis7_server.port},
        )
        assert created.status_code == 201
        response = await api.client.get(
            "/api/health", headers={"X-Connection-Id": created.json()["id"]}
        )
        database = response.json()["database"]
        assert database["type"] == "redis"
        assert database["version"].startswith("7.0.")
        assert database["capabilities"]["hasCommandLog"] is False
        assert database["capabilities"]["hasSlotStats"] is False

    async def test_storage_backend_is_named(self, app_factory: AppFactory):
        async with app_factory() as app:
            body = (await app.client.get("/health")).json()
        assert body["storage"] == {
            "status": "ok",
            "type": app.settings.STORAGE_TYPE.value,
            "persistent": app.settings.STORAGE_TYPE.value != "memory",
            "error": None,
            "failingSince": None,
        }


class TestHealthOnABusyService:
    async def test_answers_in_a_few_turns_of_a_busy_event_loop(self, api: RunningApp):
        """Every await that waits costs a whole turn of the loop, and on a busy service a
        turn is a scrape's slice or a batch of polls (10 ms here). A probe's timeout counts
        them all: the check takes storage's answer from the connection's lookup alone and
        PINGs over the engine's own connection, which took 14-20 turns as a storage ping
        beside the lookup and a PING through the pool's checkout."""
        await api.client.get("/api/health")  # the engine detected once
        times: list[float] = []
        async with busy_event_loop(step_s=0.01):
            for _ in range(5):
                started = time.perf_counter()
                response = await api.client.get("/api/health")
                times.append(time.perf_counter() - started)
                assert response.json()["database"]["status"] == "connected"
        # About eleven turns now (115 ms); the two storage hops and the pool's checkout
        # made it about twenty (200 ms).
        assert statistics.median(times) < 0.15

    async def test_a_loop_held_past_the_storage_budget_is_not_storage_failing(
        self, api: RunningApp
    ):
        """The storage budget is counted on the event loop. A loop held longer than it (a
        scrape of a thousand connections held it 0.9 s) ran the budget out while storage
        had answered at once, and /health said 503 `no answer`: a load balancer would
        have taken a working service out."""
        await api.client.get("/api/health")  # the connection found once
        loop = asyncio.get_running_loop()

        def hold_the_loop() -> None:
            time.sleep(STORAGE_BUDGET_S + 0.3)

        def then_hold(_conn: object) -> None:
            # On the storage thread, while the health check's lookup waits its turn: the
            # loop is held from just before the lookup's answer reaches it.
            time.sleep(0.2)
            loop.call_soon_threadsafe(hold_the_loop)

        holder = asyncio.create_task(api.services.db.run(then_hold, background=True))
        await asyncio.sleep(0.05)
        response = await api.client.get("/api/health")
        await holder
        assert response.status_code == 200, response.text
        assert response.json()["storage"]["status"] == "ok"
        assert response.json()["database"]["status"] == "connected"
