"""The Latency page against real servers: real spikes (DEBUG SLEEP), real engine limits."""

import re
from collections.abc import AsyncIterator, Callable, Iterator

import pytest

from tests.fixtures.app import AppFactory, RunningApp, target_of
from tests.fixtures.servers import EngineKind, RunningServer, ServerFactory
from tests.fixtures.waiting import eventually


@pytest.fixture(scope="module")
def debuggable(server_factory: ServerFactory) -> Iterator[RunningServer]:
    """A Valkey that accepts DEBUG SLEEP, with the latency monitor off as shipped."""
    server = server_factory.start("valkey", config={"enable-debug-command": "yes"})
    yield server
    server_factory.stop(server)


@pytest.fixture
async def watching(
    memory_app_factory: AppFactory, debuggable: RunningServer
) -> AsyncIterator[RunningApp]:
    with debuggable.client() as conn:
        conn.config_set("latency-monitor-threshold", "0")
        conn.execute_command("LATENCY", "RESET")
    async with memory_app_factory(**target_of(debuggable), LATENCY_POLL_INTERVAL_MS=100) as app:
        yield app


async def page(app: RunningApp) -> str:
    response = await app.client.get("/latency")
    assert response.status_code == 200, response.text
    return response.text


def section(html: str, name: str) -> str:
    found = re.search(rf'data-section="{name}".*?</section>', html, re.S)
    assert found is not None, f"no {name} section"
    return found.group(0)


def spike(server: RunningServer, seconds: float = 0.05) -> None:
    with server.client() as conn:
        conn.config_set("latency-monitor-threshold", "1")
        conn.execute_command("DEBUG", "SLEEP", str(seconds))


class TestEvents:
    async def test_a_real_spike_shows_in_latest_history_and_doctor(
        self, watching: RunningApp, debuggable: RunningServer
    ):
        spike(debuggable)

        async def detected() -> bool:  # the page reads live once the engine has answered once
            return '<tr data-event="command">' in await page(watching)

        await eventually(detected)
        html = await page(watching)
        latest = section(html, "latency-latest")
        row = re.search(r'<tr data-event="command">.*?</tr>', latest, re.S)
        assert row is not None
        # At a 1 ms threshold a busy machine records its own slower calls after the
        # spike, so the spike is the row's maximum and the latest is at least 1 ms.
        latest_ms = re.search(r'data-field="latest">([\d,]+) ms', row.group(0))
        max_ms = re.search(r'data-field="max">([\d,]+) ms', row.group(0))
        assert latest_ms is not None
        assert max_ms is not None
        assert int(latest_ms.group(1).replace(",", "")) >= 1
        assert int(max_ms.group(1).replace(",", "")) >= 50
        assert 'data-threshold="1"' in html
        assert "Latency monitoring is off" not in html

        history = section(html, "latency-history")
        source = re.search(r'data-source="(/api/metrics/latency/history/command)"', history)
        assert source is not None
        points = (await watching.client.get(source.group(1))).json()
        assert max(point["latencyMs"] for point in points) >= 50
        assert "command" in section(html, "latency-doctor")

    async def test_the_spike_is_stored_and_listed(
        self, watching: RunningApp, debuggable: RunningServer
    ):
        spike(debuggable)

        async def stored() -> bool:
            return 'data-stored-event="command"' in await page(watching)

        await eventually(stored)

    async def test_monitoring_off_says_how_to_turn_it_on(self, watching: RunningApp):
        html = await page(watching)
        assert 'data-state="latency-monitor-off"' in html
        assert "CONFIG SET latency-monitor-threshold" in html
        assert "No latency events recorded" in section(html, "latency-latest")


class TestHistogram:
    async def test_command_calls_match_the_servers_histogram(
        self, watching: RunningApp, debuggable: RunningServer
    ):
        with debuggable.client() as conn:
            for n in range(25):
                conn.set(f"ui:latency:{n}", n)
            html = await page(watching)
            reply = conn.execute_command("LATENCY", "HISTOGRAM", "set")
        calls = reply[1][1]  # ["set", ["calls", n, "histogram_usec", [...]]]
        row = re.search(r'<tr data-command="set">.*?</tr>', html, re.S)
        assert row is not None
        assert f'data-field="calls">{calls:,}<' in row.group(0)
        assert re.search(r'data-field="p99">≤ [\d.]+ (µs|ms)', row.group(0))
        assert "<rect" in row.group(0)

    async def test_redis_6_2_shows_the_requirement(
        self, memory_app_factory: AppFactory, redis6_server: RunningServer
    ):
        async with memory_app_factory(**target_of(redis6_server)) as app:

            async def detected() -> bool:
                return "needs Redis 7.0 or newer" in section(await page(app), "latency-histogram")

            await eventually(detected)
            html = await page(app)
        assert 'data-problem="unsupported"' in section(html, "latency-histogram")
        assert "data-problem" not in section(html, "latency-latest")  # 6.2 has LATENCY LATEST


class TestWithoutConfig:
    async def test_a_renamed_config_explains_the_missing_threshold(
        self, memory_app_factory: AppFactory, fresh: Callable[..., RunningServer]
    ):
        server = fresh("valkey", config={"rename-command": 'CONFIG ""'})
        async with memory_app_factory(**target_of(server)) as app:

            async def detected() -> bool:
                return 'data-problem="config"' in await page(app)

            await eventually(detected)
            html = await page(app)
            connection = await app.services.connections.get("env-default")
            sent = app.services.connections.ledger(connection).costs()
        assert "The latency threshold cannot be shown." in html
        assert "CONFIG is not available on this server: the command is renamed or disabled" in html
        assert "data-threshold" not in html
        # The rest of the page works: the latency monitor itself is there.
        assert "data-problem" not in section(html, "latency-latest")
        assert sent["CONFIG GET"].calls == 1  # detection's probe only

    async def test_a_plain_valkey_shows_no_config_notice(self, watching: RunningApp):
        async def detected() -> bool:
            return "latency-monitor-off" in await page(watching)

        await eventually(detected)
        assert 'data-problem="config"' not in await page(watching)


class TestWithoutTheMonitor:
    async def test_a_renamed_latency_command_shows_the_requirement(
        self, memory_app_factory: AppFactory, server_factory: ServerFactory
    ):
        server = server_factory.start("valkey", config={"rename-command": 'LATENCY ""'})
        try:
            async with memory_app_factory(**target_of(server)) as app:

                async def detected() -> bool:
                    return "latency monitor (LATENCY) is not available" in await page(app)

                await eventually(detected)
                html = await page(app)
        finally:
            server_factory.stop(server)
        for name in ("latency-latest", "latency-doctor"):
            assert 'data-problem="unsupported"' in section(html, name)
        assert "data-charts" not in html


class TestDoctor:
    @pytest.mark.parametrize("kind", ["valkey", "redis7"])
    async def test_the_advice_is_a_list_of_its_own(
        self, kind: EngineKind, server_factory: ServerFactory, memory_app_factory: AppFactory
    ):
        """Valkey's "Here is some advice for you:" and Redis's "I have a few advices for
        you:" both head a list set apart, one entry per line the engine starts with "- "."""
        server = server_factory.start(kind, config={"enable-debug-command": "yes"})
        try:
            spike(server, 0.03)
            with server.client() as conn:
                report = conn.execute_command("LATENCY", "DOCTOR")
            async with memory_app_factory(**target_of(server)) as app:
                html = section(await page(app), "latency-doctor")
        finally:
            server_factory.stop(server)
        advice = re.search(r'<div class="doctor-advice" data-advice>(.*?)</div>', html, re.S)
        assert advice is not None, html
        entries = sum(line.startswith("- ") for line in report.splitlines())
        assert entries >= 1, report
        assert advice.group(1).count("<li>") == entries
        assert "<strong data-title>command</strong>" in html  # "1. command: 1 latency spikes"
        assert "as the server wrote it" in html
