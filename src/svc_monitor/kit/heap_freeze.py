"""Keeps the service's long-lived objects out of the garbage collector's full passes.

A full collection walks every object the collector tracks. Once the service is loaded,
nearly all of them live as long as the process (FastAPI, pydantic and SQLAlchemy: about a
million objects) or as long as a connection is watched (its poll loops, tasks, clients
and state: about 400 per connection). Walking them is the longest single step of the
event loop: 70 ms with the loaded service alone (bench/webhooks.py's p99), and hundreds of
ms at a thousand connections (bench/poll_fanout.py, bench/prometheus.py).

`gc.freeze()` moves every tracked object into a generation no collection walks. The
service freezes once it is loaded; when the set of polled connections changes, the
frozen objects go back to the collector (`gc.unfreeze()`: a removed connection's cycles
must be collectable), and are frozen again right after the next full collection has
run, which found the garbage among them. Freezing costs nothing but moving lists.
Objects frozen in flight (a request, a poll) are still freed by reference counting;
only a cycle among them waits for the next change of the connection set.
"""

import asyncio
import gc
from typing import Any


class HeapFreezer:
    """Freezes the heap after the full collection that follows a change."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stale = False

    def start(self) -> None:
        """Freeze what is alive now (after a full collection) and watch for changes."""
        self._loop = asyncio.get_running_loop()
        gc.collect()
        gc.freeze()
        gc.callbacks.append(self._collected)

    def stop(self) -> None:
        if self._collected in gc.callbacks:
            gc.callbacks.remove(self._collected)
        self._loop = None

    def changed(self) -> None:
        """Objects came or went for good (a connection's loops started or stopped)."""
        if self._loop is None:
            return
        gc.unfreeze()
        self._stale = True

    def _collected(self, phase: str, info: dict[str, Any]) -> None:
        # Any thread may run a collection (the storage thread allocates too): the freeze
        # itself runs on the loop, after the collection has finished.
        if phase != "stop" or info["generation"] != 2 or not self._stale:
            return
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        self._stale = False
        loop.call_soon_threadsafe(self._freeze)

    def _freeze(self) -> None:
        if self._loop is not None and not self._stale:
            gc.freeze()
