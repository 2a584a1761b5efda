"""A scrape hands the event loop back between slices: requests and polls are not held
behind the whole of it, and what it says does not change for being sliced."""

import asyncio

import pytest

from svc_monitor.prometheus import service as prometheus_service
from svc_monitor.prometheus.service import PrometheusService
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
