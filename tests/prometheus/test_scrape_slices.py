"""A scrape hands the event loop back between slices: requests and polls are not held
behind the whole of it, and what it says does not change for being sliced."""

import asyncio
import gc

import pytest

from svc_monitor.prometheus import catalogue, service as prometheus_service
from svc_monitor.prometheus.collector import Rows
from svc_monitor.prometheus.service import PrometheusService
from svc_monitor.prometheus.text import LINES_PER_STEP, write, write_in_steps
from tests.fixtures.app import RunningApp
from tests.fixtures.waiting import eventually


def family_lines(text: bytes) -> list[str]:
    return [line for line in text.decode().splitlines() if line.startswith("# TYPE ")]


async def settled(prometheus: PrometheusService) -> list[str]:
    """The families once every poll kind has made its first pass: two scrapes apart agree."""
    seen: list[list[str]] = []

    async def same_twice() -> bool:
        seen.append(family_lines(await prometheus.render()))
        return len(seen) > 1 and seen[-1] == seen[-2] and len(seen[-1]) > 10

    await eventually(same_twice)
    return seen[-1]


class TestSlicedScrape:
    async def test_other_work_runs_during_a_scrape_and_the_families_are_the_same(
        self, api: RunningApp, monkeypatch: pytest.MonkeyPatch
    ):
        prometheus = api.features.prometheus
        whole = await settled(prometheus)

        order: list[str] = []

        async def meanwhile() -> None:
            order.append("other work")

        # A slice of no length: the scrape gives the loop back after every family.
        monkeypatch.setattr(prometheus_service, "SLICE_S", 0.0)
        other = asyncio.create_task(meanwhile())
        sliced = await prometheus.render()
        order.append("scrape done")
        await other

        assert order == ["other work", "scrape done"]
        assert family_lines(sliced) == whole

    async def test_the_otlp_export_families_are_the_same_sliced(
        self, api: RunningApp, monkeypatch: pytest.MonkeyPatch
    ):
        prometheus = api.features.prometheus
        await settled(prometheus)
        whole = [f.name for f in await prometheus.families()]
        monkeypatch.setattr(prometheus_service, "SLICE_S", 0.0)
        sliced = [f.name for f in await prometheus.families()]
        assert sliced == whole


class TestStepsWithinAFamily:
    def test_a_long_family_is_written_in_steps_and_reads_the_same(self):
        """The commandstats families hold ~30 lines per connection: at a thousand
        connections one family written in one go held the loop for 50-65 ms."""
        rows = Rows(catalogue.COMMAND_CALLS)
        for node in range(1000):
            for command in ("get", "set", "hget", "info", "ping", "client|list"):
                rows.add_metric([f"127.0.0.1:{7000 + node}", command], node * 10 + 1)
        whole: list[str] = []
        write(rows, whole)
        stepped: list[str] = []
        steps = sum(1 for _ in write_in_steps(rows, stepped))
        assert stepped == whole
        assert len(whole) == 1 + 6000  # the HELP/TYPE header, then one line per row
        assert steps == -(-6000 // LINES_PER_STEP) > 1


class TestCollectorPausedForTheScrape:
    """The cyclic garbage collector waits while a scrape's rows are alive, and always
    comes back."""

    async def test_on_again_after_a_scrape_even_a_cancelled_one(
        self, api: RunningApp, monkeypatch: pytest.MonkeyPatch
    ):
        prometheus = api.features.prometheus
        await settled(prometheus)
        seen_during: list[bool] = []

        async def watch() -> None:
            for _ in range(20):
                seen_during.append(gc.isenabled())
                await asyncio.sleep(0)

        monkeypatch.setattr(prometheus_service, "SLICE_S", 0.0)
        watcher = asyncio.create_task(watch())
        await prometheus.render()
        await watcher
        assert False in seen_during  # paused between the slices, not only within one
        assert gc.isenabled()

        scrape = asyncio.create_task(prometheus.render())
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        scrape.cancel()
        with pytest.raises(asyncio.CancelledError):
            await scrape
        assert gc.isenabled()

    async def test_overlapping_scrapes_bring_it_back_when_the_last_ends(
        self, api: RunningApp, monkeypatch: pytest.MonkeyPatch
    ):
        prometheus = api.features.prometheus
        await settled(prometheus)
        monkeypatch.setattr(prometheus_service, "SLICE_S", 0.0)
        text, families = await asyncio.gather(prometheus.render(), prometheus.families())
        assert text
        assert families
        assert gc.isenabled()

    async def test_left_off_when_someone_else_turned_it_off(self, api: RunningApp):
        prometheus = api.features.prometheus
        gc.disable()
        try:
            await prometheus.render()
            assert not gc.isenabled()
        finally:
            gc.enable()
