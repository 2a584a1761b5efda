"""The one thread a synchronous driver (SQLite, libSQL) runs on, with two lanes.

A request (a page's read, a settings change, `/health`'s ping) must not wait behind the
history the poller writes in the background: at a thousand connections a second's
samples are a transaction of their own, and with several queued, a health check in a
plain first-come queue waited seconds. Here foreground work always runs before any
background work still waiting, so it waits at most for the one transaction in progress.
Within a lane, work runs in the order it was handed in.
"""

import itertools
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

T = TypeVar("T")

_FOREGROUND, _BACKGROUND, _STOP = 0, 1, 2


class StorageThread:
    """A single worker thread taking foreground work before background work."""

    def __init__(self, name: str) -> None:
        self._name = name
        # (lane, order handed in, future, work): the order keeps each lane first come,
        # first served and means two entries never compare their futures.
        self._queue: queue.PriorityQueue[tuple[int, int, Future[Any] | None, Any]] = (
            queue.PriorityQueue()
        )
        self._order = itertools.count()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._closed = False

    def submit(self, work: Callable[[], T], *, background: bool = False) -> "Future[T]":
        future: Future[T] = Future()
        with self._lock:
            if self._closed:
                raise RuntimeError("storage is closed")
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, name=self._name, daemon=True)
                self._thread.start()
            lane = _BACKGROUND if background else _FOREGROUND
            self._queue.put((lane, next(self._order), future, work))
        return future

    def shutdown(self) -> None:
        """Run what is queued, then end the thread and wait for it."""
        with self._lock:
            self._closed = True
            thread = self._thread
            self._queue.put((_STOP, next(self._order), None, None))
        if thread is not None:
            thread.join()

    def _work(self) -> None:
        while True:
            _, _, future, work = self._queue.get()
            if future is None:
                return
            if not future.set_running_or_notify_cancel():
                continue  # the caller gave up before it started
            try:
                result = work()
            except BaseException as exc:  # handed to the caller, whatever it is
                future.set_exception(exc)
            else:
                future.set_result(result)
