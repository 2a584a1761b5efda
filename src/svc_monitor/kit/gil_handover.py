"""Lets a worker thread have the interpreter lock while the event loop is busy.

A worker thread lets go of the interpreter lock (the GIL) around every blocking call (the
SQLite driver around every call into SQLite, a password hash, a socket read) and must
win it back afterwards. CPython 3.11 asks the holder to hand it over only after a waiter
has waited a whole switch interval (5 ms) in which the lock never changed hands; a busy
event loop lets go and takes it back itself around every socket call and between
callbacks, each time before the woken thread runs, so that never happens, and the thread
waits for as long as the loop stays busy. At a thousand connections `/api/health`'s p99
was 11 s (bench/prometheus.py), and with the loop busy a 1,000-row history write on
SQLite took 6.4 s (bench/history_writes.py).

While any work is on a worker thread, the loop naps `NAP_S` every `EVERY_S`: asleep, it
has let go of the lock, and the waiting thread takes it. That costs the loop at most a
twentieth of its time, and only while a thread has work; the thread then gets the lock
within milliseconds. Await every worker thread inside `thread_at_work` (or through
`to_thread`).
"""

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterator
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")

EVERY_S = 0.002
NAP_S = 0.0001


class _Handover:
    """Counts work in flight on worker threads; naps the loop while there is some."""

    def __init__(self) -> None:
        self._in_flight = 0
        self._timer: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def started(self) -> None:
        loop = asyncio.get_running_loop()
        if self._loop is not loop:  # a new loop (tests run many): nothing of the old counts
            if self._timer is not None:
                self._timer.cancel()
            self._loop, self._timer, self._in_flight = loop, None, 0
        self._in_flight += 1
        if self._timer is None:
            self._timer = loop.call_later(EVERY_S, self._nap)

    def finished(self) -> None:
        self._in_flight = max(0, self._in_flight - 1)

    def _nap(self) -> None:
        if not self._in_flight or self._loop is None:
            self._timer = None
            return
        time.sleep(NAP_S)  # asleep, the loop holds no lock: the thread takes it
        self._timer = self._loop.call_later(EVERY_S, self._nap)


_handover = _Handover()


@contextlib.contextmanager
def thread_at_work() -> Iterator[None]:
    """Around the event loop's await of work handed to a worker thread."""
    _handover.started()
    try:
        yield
    finally:
        _handover.finished()


async def to_thread(func: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
    """`asyncio.to_thread`, with the loop napping until the thread is done."""
    with thread_at_work():
        return await asyncio.to_thread(func, *args, **kwargs)
