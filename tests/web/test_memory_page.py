"""The Memory page against real servers: MEMORY STATS and DOCTOR as the engine answers them."""

import html as html_text
import re
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from tests.fixtures.app import AppFactory, RunningApp, target_of
from tests.fixtures.servers import RunningServer, ServerFactory
from tests.fixtures.waiting import eventually


@pytest.fixture(scope="module")
def server(server_factory: ServerFactory) -> Iterator[RunningServer]:
    """A Valkey of this module's own, so no other test's keys change its numbers."""
    started = server_factory.start("valkey")
    yield started
    server_factory.stop(started)


@pytest.fixture
async def watching(
    memory_app_factory: AppFactory, server: RunningServer
) -> AsyncIterator[RunningApp]:
    async with memory_app_factory(**target_of(server), HISTORY_SAMPLE_INTERVAL_MS=100) as app:
        yield app


async def page(app: RunningApp) -> str:
    response = await app.client.get("/memory")
    assert response.status_code == 200, response.text
    return response.text


def section(html: str, name: str) -> str:
    found = re.search(rf'data-section="{name}".*?</section>', html, re.S)
    assert found is not None, f"no {name} section"
    return found.group(0)


def stat(html: str, name: str) -> str:
    found = re.search(rf'data-stat="{re.escape(name)}">.*?data-field="raw">([^<]*)<', html, re.S)
    assert found is not None, f"no {name} row"
    return found.group(1)


def memory_stats(server: RunningServer) -> dict[str, Any]:
    with server.client() as conn:
        reply = conn.execute_command("MEMORY", "STATS")
    return dict(zip(reply[::2], reply[1::2], strict=True))


class TestStats:
    async def test_values_match_the_servers_memory_stats(
        self, watching: RunningApp, server: RunningServer
    ):
        with server.client() as conn:
            conn.flushall()
            conn.mset({f"ui:memory:{n}": "x" * 100 for n in range(37)})
        html = await page(watching)
        expected = memory_stats(server)
        assert stat(html, "keys.count") == "37" == str(expected["keys.count"])
        # Fixed since start-up, so the page's read and ours must agree exactly.
        assert stat(html, "startup.allocated") == str(expected["startup.allocated"])
        db0 = dict(zip(expected["db.0"][::2], expected["db.0"][1::2], strict=True))
        shown = stat(html, "db.0.overhead.hashtable.main")
        assert shown == str(db0["overhead.hashtable.main"])
        card = re.search(r'data-metric="keys.count">.*?card-value">([^<]*)<', html, re.S)
        assert card is not None
        assert card.group(1) == "37"

    async def test_the_maxmemory_card_follows_config(
        self, watching: RunningApp, server: RunningServer
    ):
        with server.client() as conn:
            conn.config_set("maxmemory", str(123 * 1024 * 1024))
            conn.config_set("maxmemory-policy", "allkeys-lru")
        try:

            async def shown() -> bool:
                return "123.0 MiB" in await page(watching)

            await eventually(shown)
            assert "policy allkeys-lru" in await page(watching)
        finally:
            with server.client() as conn:
                conn.config_set("maxmemory", "0")
                conn.config_set("maxmemory-policy", "noeviction")

    async def test_the_doctor_report_is_the_servers(
        self, watching: RunningApp, server: RunningServer
    ):
        with server.client() as conn:
            conn.flushall()
            report = conn.execute_command("MEMORY", "DOCTOR")
        doctor = section(await page(watching), "memory-doctor")
        assert html_text.escape(report.strip(), quote=False)[:80] in doctor


class TestCharts:
    async def test_chart_sources_answer_with_stored_samples(self, watching: RunningApp):
        html = await page(watching)
        snapshots = re.search(r'data-section="memory-snapshots" data-source="([^"]+)"', html)
        history = re.search(r'data-section="memory-history" data-source="([^"]+)"', html)
        assert snapshots is not None
        assert history is not None

        async def sampled() -> bool:
            now = int(time.time() * 1000)
            url = f"{snapshots.group(1)}&from={now - 900_000}&to={now + 1000}&maxPoints=300"
            return len((await watching.client.get(url)).json()) >= 2

        await eventually(sampled)
        now = int(time.time() * 1000)
        rows = (await watching.client.get(f"{snapshots.group(1)}&from={now - 900_000}")).json()
        assert rows[-1]["usedMemory"] > 0
        assert rows[-1]["usedMemoryRss"] > 0
        points = (await watching.client.get(f"{history.group(1)}?maxPoints=100")).json()["points"]
        assert points[-1]["usedMemory"] > 0


class TestWithoutMemoryCommands:
    async def test_a_renamed_memory_command_shows_requirements(
        self, memory_app_factory: AppFactory, server_factory: ServerFactory
    ):
        locked = server_factory.start("valkey", config={"rename-command": 'MEMORY ""'})
        try:
            async with memory_app_factory(**target_of(locked)) as app:

                async def detected() -> bool:
                    return "MEMORY DOCTOR is not available" in await page(app)

                await eventually(detected)
                html = await page(app)
        finally:
            server_factory.stop(locked)
        assert 'data-problem="unsupported"' in section(html, "memory-stats")
        assert 'data-problem="unsupported"' in section(html, "memory-doctor")
        assert 'data-section="memory-history"' in html  # history charts still there
