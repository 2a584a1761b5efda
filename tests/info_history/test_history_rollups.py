"""Charts over days read five-minute rollups; what they show must not change because of it."""

from typing import Any

import pytest

from svc_monitor.info_history.store import ROLLUP_MS, MetricsStore
from tests.fixtures.app import AppFactory, RunningApp
from tests.fixtures.waiting import eventually

# A window long before any live sample of the test's own server: only the rows below.
START = 1_600_000_020_000 // ROLLUP_MS * ROLLUP_MS
SAMPLE_MS = 10_000


def sample(at: int, ops: int, clients: int | None) -> dict[str, int | str | None]:
    return {
        "connection_id": "env-default",
        "captured_at": at,
        "ops_per_sec": ops,
        "connected_clients": clients,
        "used_memory": 1_000_000 + ops,
    }


async def chart(app: RunningApp, since: int, until: int, max_points: int) -> list[dict[str, Any]]:
    response = await app.client.get(
        f"/api/metrics/history?from={since}&to={until}&maxPoints={max_points}"
    )
    assert response.status_code == 200
    points: list[dict[str, Any]] = response.json()["points"]
    return points


@pytest.fixture
async def seeded(app_factory: AppFactory):
    async with app_factory() as app:
        # The service's own catch-up pass runs at start; seed after it, so what these
        # tests roll up is theirs to count (the next pass is a minute away).
        metrics = app.services.info_history

        async def caught_up() -> bool:
            return metrics.rollup_passes >= 1

        await eventually(caught_up)
        # 40 minutes of samples; clients missing from every third sample.
        rows = [
            sample(START + i * SAMPLE_MS, ops=i * 7 % 100, clients=None if i % 3 == 0 else i)
            for i in range(240)
        ]
        await MetricsStore(app.services.db).insert([], rows)
        yield app


class TestRollups:
    async def test_a_long_window_shows_the_same_averages_once_rolled_up(self, seeded: RunningApp):
        until = START + 240 * SAMPLE_MS - 1
        before = await chart(seeded, START, until, max_points=4)  # 10-minute buckets
        store = MetricsStore(seeded.services.db)
        written = await store.roll_up(now_ms=START + 30 * 60_000)  # 6 finished five-minute sets
        assert written == 6
        after = await chart(seeded, START, until, max_points=4)
        assert [p["samples"] for p in after] == [p["samples"] for p in before] == [60] * 4
        for was, now in zip(before, after, strict=True):
            assert now["opsPerSec"] == pytest.approx(was["opsPerSec"])
            assert now["usedMemory"] == pytest.approx(was["usedMemory"])
            # Missing values are not zeros: the average is over the samples that had one.
            assert now["connectedClients"] == pytest.approx(was["connectedClients"])

    async def test_rolling_up_twice_writes_nothing_new(self, seeded: RunningApp):
        store = MetricsStore(seeded.services.db)
        now = START + 40 * 60_000
        assert await store.roll_up(now_ms=now) == 8
        assert await store.roll_up(now_ms=now) == 0

    async def test_short_windows_keep_every_sample(self, seeded: RunningApp):
        await MetricsStore(seeded.services.db).roll_up(now_ms=START + 40 * 60_000)
        points = await chart(seeded, START, START + 5 * 60_000 - 1, max_points=1000)
        assert len(points) == 30
        assert all(p["samples"] == 1 for p in points)
