"""INFO commandstats read along with INFO: the commandstats history and the config watch
keep their cadence and their findings, and the server gets no INFO of theirs."""

import itertools
from collections.abc import Iterator

import pytest

from svc_monitor.event_types.access import ConfigChanged
from svc_monitor.pipe.facts import CommandstatsFacts
from tests.detection.helpers import BusWatcher, person, run
from tests.fixtures.app import AppFactory, RunningApp, target_of
from tests.fixtures.servers import EngineKind, RunningServer, ServerFactory
from tests.fixtures.waiting import eventually

# INFO every 100 ms, the two riders every second: well within what riding keeps.
FAST = {
    "ANOMALY_POLL_INTERVAL_MS": 100,
    "COMMANDSTATS_POLL_INTERVAL_MS": 1000,
    "CONFIG_WATCH_INTERVAL_MS": 1000,
}


@pytest.fixture(params=["valkey", "redis7", "redis6"])
def server(
    request: pytest.FixtureRequest, server_factory: ServerFactory
) -> Iterator[RunningServer]:
    started = server_factory.start(request.param)
    yield started
    server_factory.stop(started)


def passes(app: RunningApp, kind: str) -> int:
    polls = app.services.live_state.polls
    return sum(n for (_, k, _), n in polls.passes.items() if k == kind)


async def commandstats_read_times(
    app: RunningApp, count: int, *, with_latest: bool = False
) -> list[int]:
    """The times of the next `count` commandstats reads handed to the pipe, after the
    latest one already there when `with_latest`."""
    seen: list[int] = []

    async def collected() -> bool:
        facts = app.services.live_state.facts("env-default", CommandstatsFacts)
        if facts is not None and (not seen or facts.at_ms != seen[-1]):
            seen.append(facts.at_ms)
        return len(seen) > count

    await eventually(collected, within=15, every=0.02)
    return seen if with_latest else seen[1:]  # the first was there when we started looking


class TestRides:
    async def test_commandstats_and_config_changes_keep_coming_without_reads_of_their_own(
        self, memory_app_factory: AppFactory, server: RunningServer
    ):
        rides = server.kind != "redis6"  # Redis 6.2 takes one INFO section at a time
        async with memory_app_factory(**FAST, **target_of(server)) as app:
            await eventually(lambda: _more(app, "info", 5))
            times = await commandstats_read_times(app, 3)
            own = {kind: passes(app, kind) for kind in ("commandstats", "config_watch")}
            watcher = BusWatcher(app)
            conn = person(server)
            try:
                await run(conn, "CONFIG", "SET", "maxmemory-policy", "allkeys-lfu")
                changed = await watcher.wait_for(ConfigChanged)
            finally:
                await conn.aclose()
            more_own = {kind: passes(app, kind) - n for kind, n in own.items()}
            latest = app.services.live_state.latest("env-default")
        assert changed.new_value == "allkeys-lfu"
        gaps = [b - a for a, b in itertools.pairwise(times)]
        # The configured second, give or take half an INFO interval and the loop's own lag.
        assert all(700 <= gap <= 1600 for gap in gaps), gaps
        assert latest is not None
        # The observation is a plain INFO's, whichever way commandstats were read.
        assert "commandstats" not in latest.info.sections
        assert "memory" in latest.info.sections
        if rides:
            assert more_own == {"commandstats": 0, "config_watch": 0}
        else:
            assert more_own["commandstats"] >= 1
            assert more_own["config_watch"] >= 1


async def _more(app: RunningApp, kind: str, n: int) -> bool:
    return passes(app, kind) >= n


@pytest.mark.parametrize("kind", ["valkey"])
async def test_a_slow_info_poll_leaves_the_readers_to_their_own_polls(
    memory_app_factory: AppFactory, server_factory: ServerFactory, kind: EngineKind
):
    # INFO every 2 s cannot carry a read due every second within half an interval.
    server = server_factory.start(kind)
    try:
        settings = {**FAST, "ANOMALY_POLL_INTERVAL_MS": 2000, **target_of(server)}
        async with memory_app_factory(**settings) as app:
            before = passes(app, "commandstats")

            async def own_reads() -> bool:
                return passes(app, "commandstats") >= before + 3

            await eventually(own_reads, within=15)
    finally:
        server_factory.stop(server)


async def test_readers_resume_their_own_reads_on_time_when_info_slows_down(
    memory_app_factory: AppFactory, server_factory: ServerFactory
):
    # A reading spanning a long gap would also blur a spike into everything around it.
    server = server_factory.start("valkey")
    try:
        async with memory_app_factory(**FAST, **target_of(server)) as app:
            await commandstats_read_times(app, 2)  # carried by INFO by now
            slowed = await app.client.put("/api/settings", json={"anomalyPollIntervalMs": 5000})
            assert slowed.status_code == 200, slowed.text
            times = await commandstats_read_times(app, 3, with_latest=True)
    finally:
        server_factory.stop(server)
    gaps = [b - a for a, b in itertools.pairwise(times)]
    # Carried until 1.5 intervals without, then read by its own poll within half an interval.
    assert all(gap <= 2400 for gap in gaps), gaps
