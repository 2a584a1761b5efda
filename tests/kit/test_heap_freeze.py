"""The heap is frozen once loaded, given back to the collector when the polled set
changes, and frozen again once a full collection has run."""

import asyncio
import gc
import weakref
from collections.abc import Iterator

import pytest

from svc_monitor.kit.heap_freeze import HeapFreezer


@pytest.fixture
def freezer() -> Iterator[HeapFreezer]:
    freezer = HeapFreezer()
    try:
        yield freezer
    finally:
        freezer.stop()
        gc.unfreeze()  # the rest of the test run must be able to free what this froze


class Cycle:
    def __init__(self) -> None:
        self.me = self


async def test_frozen_after_the_full_collection_that_follows_a_change(freezer: HeapFreezer):
    freezer.start()
    assert gc.get_freeze_count() > 0
    freezer.changed()  # e.g. a connection removed: its cycles must be collectable
    assert gc.get_freeze_count() == 0
    gc.collect(0)  # a young collection does not re-freeze
    await asyncio.sleep(0)
    assert gc.get_freeze_count() == 0
    gc.collect()
    await asyncio.sleep(0)
    assert gc.get_freeze_count() > 0


async def test_a_cycle_dropped_after_the_freeze_is_collected_after_a_change(
    freezer: HeapFreezer,
):
    cycle = Cycle()
    freezer.start()
    gone: list[bool] = []
    watch = weakref.ref(cycle, lambda _: gone.append(True))
    del cycle
    gc.collect()
    assert watch() is not None  # frozen: no collection sees it
    freezer.changed()
    gc.collect()
    assert gone == [True]


async def test_stopped_it_no_longer_freezes(freezer: HeapFreezer):
    freezer.start()
    freezer.stop()
    gc.unfreeze()
    freezer.changed()
    gc.collect()
    await asyncio.sleep(0)
    assert gc.get_freeze_count() == 0
