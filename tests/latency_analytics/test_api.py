"""Latency history from real LATENCY LATEST / HISTOGRAM polls, on every storage backend."""

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from tests.fixtures.app import AppFactory, RunningApp
from tests.fixtures.servers import RunningServer, ServerFactory
from tests.fixtures.waiting import eventually

FAST = {"LATENCY_POLL_INTERVAL_MS": 100}
# A threshold well above what a busy CI machine adds to ordinary commands, so that only the
# test's own DEBUG SLEEP spikes; at 1 ms a slow INFO or CLIENT LIST became a second event.
THRESHOLD_MS = 50
SPIKY = {"latency-monitor-threshold": str(THRESHOLD_MS), "enable-debug-command": "yes"}


@pytest.fixture(scope="module")
def spiky(server_factory: ServerFactory) -> Iterator[RunningServer]:
    server = server_factory.start("valkey", config=SPIKY)
    yield server
    server_factory.stop(server)


@pytest.fixture
async def polled(app_factory: AppFactory, spiky: RunningServer) -> AsyncIterator[RunningApp]:
    async with app_factory(**FAST, DB_HOST=spiky.host, DB_PORT=spiky.port) as app:
        yield app


async def rows(app: RunningApp, route: str, query: str = "", **headers: str) -> list[Any]:
    response = await app.client.get(f"/api/latency-analytics/{route}?{query}", headers=headers)
    assert response.status_code == 200, response.text
    body: list[Any] = response.json()
    return body


def sleep_on(server: RunningServer, seconds: float = 0.1) -> None:
    with server.client() as conn:
        conn.execute_command("DEBUG", "SLEEP", str(seconds))


class TestSnapshots:
    async def test_a_spike_is_stored_once(self, polled: RunningApp, spiky: RunningServer):
        with spiky.client() as conn:
            conn.execute_command("LATENCY", "RESET")  # spikes of earlier tests
        sleep_on(spiky)

        async def stored() -> bool:
            return any(r["eventName"] == "command" for r in await rows(polled, "snapshots"))

        await eventually(stored)
        await asyncio.sleep(0.4)  # several more polls of the same, unmoved event
        events = [r for r in await rows(polled, "snapshots") if r["eventName"] == "command"]
        assert len(events) == 1
        event = events[0]
        assert event["latestMs"] >= 100
        assert event["maxMs"] >= event["latestMs"]
        assert abs(event["latestEventAt"] - time.time() * 1000) < 60_000  # epoch ms

        await asyncio.sleep(1.0)  # the engine keeps seconds: a new spike needs a new second
        sleep_on(spiky)

        async def moved() -> bool:
            found = [r for r in await rows(polled, "snapshots") if r["eventName"] == "command"]
            return len(found) == 2

        await eventually(moved)

    async def test_histograms_one_per_poll_with_paging(
        self, polled: RunningApp, spiky: RunningServer
    ):
        with spiky.client() as conn:
            conn.set("lat:k", "v")

        async def several() -> bool:
            return len(await rows(polled, "histograms")) >= 3

        await eventually(several)
        stored = await rows(polled, "histograms")
        assert stored[0]["data"]["set"]["calls"] >= 1
        set_stats = stored[0]["data"]["set"]
        counts = [set_stats["histogram"][b] for b in sorted(set_stats["histogram"], key=int)]
        assert counts == sorted(counts)
        assert counts[-1] == set_stats["calls"]
        page = await rows(polled, "histograms", "limit=1&offset=1")
        assert [r["id"] for r in page] == [stored[1]["id"]]
        second = stored[1]["capturedAt"]
        window = await rows(polled, "histograms", f"from={second}&to={second}")
        assert [r["capturedAt"] for r in window] == [second]

    async def test_bad_paging_422s(self, api: RunningApp):
        response = await api.client.get("/api/latency-analytics/snapshots?limit=0")
        assert response.status_code == 422
        assert "limit" in response.json()["fields"]


class TestEngines:
    async def test_redis6_stores_events_without_histograms(
        self, server_factory: ServerFactory, memory_app_factory: AppFactory
    ):
        server = server_factory.start(
            "redis6", config={"latency-monitor-threshold": str(THRESHOLD_MS)}
        )
        try:
            async with memory_app_factory(**FAST, DB_HOST=server.host, DB_PORT=server.port) as app:
                sleep_on(server)

                async def stored() -> bool:
                    return bool(await rows(app, "snapshots"))

                await eventually(stored)
                await asyncio.sleep(0.3)
                assert await rows(app, "histograms") == []
        finally:
            server_factory.stop(server)


class TestIsolation:
    async def test_two_connections_never_see_each_others_history(
        self, memory_app_factory: AppFactory, spiky: RunningServer, server_factory: ServerFactory
    ):
        other = server_factory.start(
            "valkey", config={"latency-monitor-threshold": str(THRESHOLD_MS)}
        )
        try:
            async with memory_app_factory(**FAST, DB_HOST=spiky.host, DB_PORT=spiky.port) as app:
                created = await app.client.post(
                    "/api/connections", json={"host": other.host, "port": other.port}
                )
                assert created.status_code == 201, created.text
                other_id = {"X-Connection-Id": created.json()["id"]}
                sleep_on(spiky)

                async def both_polled() -> bool:
                    mine = await rows(app, "snapshots")
                    theirs = await rows(app, "histograms", **other_id)
                    return bool(mine) and bool(theirs)

                await eventually(both_polled)
                assert await rows(app, "snapshots", **other_id) == []
                mine = {r["id"] for r in await rows(app, "histograms")}
                assert mine.isdisjoint(r["id"] for r in await rows(app, "histograms", **other_id))
        finally:
            server_factory.stop(other)
