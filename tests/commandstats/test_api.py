"""Commandstats history and summary from real polls, on every storage backend."""

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from tests.fixtures.app import AppFactory, RunningApp
from tests.fixtures.servers import RunningServer, ServerFactory
from tests.fixtures.waiting import eventually

FAST = {"COMMANDSTATS_POLL_INTERVAL_MS": 100}


@pytest.fixture(scope="module")
def quiet(server_factory: ServerFactory) -> Iterator[RunningServer]:
    """A server of this module's own, so no other test moves its counters."""
    server = server_factory.start("valkey")
    yield server
    server_factory.stop(server)


@pytest.fixture
async def polled(app_factory: AppFactory, quiet: RunningServer) -> AsyncIterator[RunningApp]:
    async with app_factory(**FAST, DB_HOST=quiet.host, DB_PORT=quiet.port) as app:
        yield app


async def summary(app: RunningApp, **headers: str) -> list[dict[str, Any]]:
    response = await app.client.get("/api/metrics/commandstats/summary", headers=headers)
    assert response.status_code == 200, response.text
    rows: list[dict[str, Any]] = response.json()
    return rows


async def history(app: RunningApp, command: str, **headers: str) -> list[dict[str, Any]]:
    response = await app.client.get(
        f"/api/metrics/commandstats/history?command={command}", headers=headers
    )
    assert response.status_code == 200, response.text
    rows: list[dict[str, Any]] = response.json()
    return rows


async def baseline_taken(app: RunningApp) -> None:
    async def has_summary() -> bool:
        return bool(await summary(app))

    await eventually(has_summary)


class TestHistory:
    async def test_commands_between_polls_make_a_row(
        self, polled: RunningApp, quiet: RunningServer
    ):
        await baseline_taken(polled)
        before = {r["command"]: r["calls"] for r in await summary(polled)}.get("lpush", 0)
        with quiet.client() as conn:
            for _ in range(3):
                conn.lpush("cs:list", "x")

        async def recorded() -> bool:
            rows = await history(polled, "LPUSH")  # names are matched case-insensitively
            return sum(int(r["callsDelta"]) for r in rows) == 3

        await eventually(recorded)
        rows = await history(polled, "lpush")
        assert rows[-1]["calls"] == before + 3
        assert all(r["intervalMs"] > 0 and r["usecDelta"] >= 0 for r in rows)
        assert rows[-1]["rejectedCalls"] == 0
        assert rows[-1]["failedCalls"] == 0
        listed = await summary(polled)
        assert "lpush" in [r["command"] for r in listed]
        assert [r["calls"] for r in listed] == sorted((r["calls"] for r in listed), reverse=True)

    async def test_reset_counters_start_a_new_baseline(
        self, polled: RunningApp, quiet: RunningServer
    ):
        await baseline_taken(polled)
        with quiet.client() as conn:
            for _ in range(4):
                conn.rpush("cs:reset", "x")
            await eventually(lambda: _has_rows(polled, "rpush"))
            conn.config_resetstat()
            conn.rpush("cs:reset", "y")
            await asyncio.sleep(0.35)  # a few polls see the counter go down
            conn.rpush("cs:reset", "y", "z")  # one call

        async def after_reset() -> bool:
            rows = await history(polled, "rpush")
            return bool(rows) and rows[-1]["calls"] == 2

        await eventually(after_reset)
        rows = await history(polled, "rpush")
        assert rows[-1]["callsDelta"] == 1  # from the new baseline, not from before the reset
        assert all(r["callsDelta"] > 0 and r["usecDelta"] >= 0 for r in rows)

    async def test_time_window_and_limit(self, polled: RunningApp, quiet: RunningServer):
        await baseline_taken(polled)
        with quiet.client() as conn:
            conn.sadd("cs:set", "a")
            await eventually(lambda: _has_rows(polled, "sadd"))
            conn.sadd("cs:set", "b")
            await eventually(lambda: _rows_at_least(polled, "sadd", 2))
        rows = await history(polled, "sadd")
        first = rows[0]["capturedAt"]
        response = await polled.client.get(
            f"/api/metrics/commandstats/history?command=sadd&from={first}&to={first}&limit=1"
        )
        assert [r["id"] for r in response.json()] == [rows[0]["id"]]


async def _has_rows(app: RunningApp, command: str) -> bool:
    return bool(await history(app, command))


async def _rows_at_least(app: RunningApp, command: str, count: int) -> bool:
    return len(await history(app, command)) >= count


class TestIsolation:
    async def test_two_connections_never_see_each_others_history(
        self,
        memory_app_factory: AppFactory,
        quiet: RunningServer,
        server_factory: ServerFactory,
    ):
        other = server_factory.start("valkey")
        try:
            async with memory_app_factory(**FAST, DB_HOST=quiet.host, DB_PORT=quiet.port) as app:
                created = await app.client.post(
                    "/api/connections", json={"host": other.host, "port": other.port}
                )
                assert created.status_code == 201, created.text
                other_id = {"X-Connection-Id": created.json()["id"]}
                await baseline_taken(app)

                async def other_polled() -> bool:
                    return bool(await summary(app, **other_id))

                await eventually(other_polled)
                with quiet.client() as conn:
                    conn.hset("cs:iso", "f", "v")
                await eventually(lambda: _has_rows(app, "hset"))
                await asyncio.sleep(0.3)  # a few polls of the other connection too
                assert await history(app, "hset", **other_id) == []
                assert "hset" not in [r["command"] for r in await summary(app, **other_id)]
        finally:
            server_factory.stop(other)
