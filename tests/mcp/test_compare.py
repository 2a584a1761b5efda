"""`compare` against a served app whose INFO history is sampled fast, on real servers."""

from collections.abc import Callable

import pytest

from svc_monitor.mcp.compare import compare
from tests.fixtures.servers import RunningServer, ServerFactory
from tests.fixtures.waiting import eventually
from tests.mcp.rest_caller import HttpApiCaller, served_as_owner, served_settings

Fresh = Callable[..., RunningServer]
# A history sample every 200 ms, so a test sees several points within seconds.
FAST_HISTORY = {"HISTORY_SAMPLE_INTERVAL_MS": 200}
VALUE = "v" * 8192


async def history_points(api: HttpApiCaller, *, at_least: int = 0, more: int = 0) -> None:
    """Wait until the history holds `at_least` points, or `more` points than it does now."""

    async def count() -> int:
        series = await api.get("/api/metrics/history", params={"maxPoints": "5000"})
        return len(series["points"])

    target = max(at_least, await count() + more)

    async def enough() -> bool:
        return await count() >= target

    await eventually(enough, within=20)


async def sampled_memory_over(api: HttpApiCaller, floor: float) -> None:
    async def grown() -> bool:
        series = await api.get("/api/metrics/history", params={"maxPoints": "5000"})
        return bool(series["points"]) and (series["points"][-1]["usedMemory"] or 0) > floor

    await eventually(grown, within=20)


def write_megabytes(server: RunningServer, megabytes: int) -> None:
    with server.client() as conn:
        pipe = conn.pipeline(transaction=False)
        for n in range(megabytes * 128):
            pipe.set(f"grow:{n}", VALUE)
        pipe.execute()


class TestCompare:
    async def test_memory_growth_between_two_points_is_reported_first(self, fresh: Fresh):
        server = fresh("valkey")
        async with served_as_owner(served_settings(server, **FAST_HISTORY)) as api:
            await history_points(api, at_least=3)
            write_megabytes(server, 20)
            await sampled_memory_over(api, 20 * 1024**2)
            # Past the write burst, so the network rates are back to their usual level.
            await history_points(api, more=4)
            result = await compare(api, window_minutes=60)

        first = result.changes[0]
        assert first.metric == "usedMemory"
        assert (first.before or 0) < 5 * 1024**2
        assert (first.now or 0) > 20 * 1024**2
        assert (first.relative or 0) > 3
        assert [c.now for c in result.changes if c.metric == "keys"] == [2560]
        line = result.to_text().split("\n1. ")[1].split("\n")[0]
        assert line.startswith("memory used: 1"), line
        assert " MB -> 2" in line
        assert "(+" in line
        # The history is younger than the hour asked for, and the answer says so.
        assert any(note.startswith("history starts at") for note in result.notes)
        assert [c.metric for c in result.changes if c.metric == "restart"] == []

    async def test_a_steady_server_reports_no_change(self, fresh: Fresh):
        server = fresh("valkey")
        async with served_as_owner(served_settings(server, **FAST_HISTORY)) as api:
            await history_points(api, at_least=5)
            result = await compare(api, window_minutes=5)

        assert [c.metric for c in result.changes] == []
        assert "No meaningful change." in result.to_text()
        assert result.steady > 0

    async def test_a_restart_between_the_points_is_named(
        self, fresh: Fresh, server_factory: ServerFactory
    ):
        server = fresh("valkey")
        async with served_as_owner(served_settings(server, **FAST_HISTORY)) as api:
            await history_points(api, at_least=3)
            write_megabytes(server, 4)
            server_factory.stop(server)
            server_factory.start_again(server)
            await history_points(api, at_least=8)

            async def answering() -> bool:
                listed = await api.get("/api/connections")
                return bool(listed[0]["engine"]["status"] == "connected")

            await eventually(answering, within=20)
            result = await compare(api, window_minutes=10)

        assert result.changes[0].metric == "restart"
        assert "after the earlier point" in result.changes[0].note

    async def test_no_history_yet_says_so(self, fresh: Fresh):
        server = fresh("valkey")
        async with served_as_owner(served_settings(server)) as api:
            result = await compare(api, window_minutes=60)

        assert result.changes == ()
        assert any("not enough history" in note for note in result.notes)

    async def test_a_window_out_of_bounds_is_refused_naming_it(self, valkey_server):
        async with served_as_owner(served_settings(valkey_server)) as api:
            with pytest.raises(ValueError, match="window_minutes: must be between 1 and"):
                await compare(api, window_minutes=0)
