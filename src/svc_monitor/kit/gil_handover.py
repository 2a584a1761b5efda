"""Lets a worker thread have the interpreter lock while the event loop is busy.

A worker thread lets go of the interpreter lock (the GIL) around every blocking call (the
SQLite driver around every call into SQLite, a password hash, a socket read) and must
win it back afterwards. CPython 3.11 asks the holder to hand it over only
after a waiter has waited a whole switch interval (5 ms) with no switch at all; a busy
event loop lets go and takes it back itself around every socket call and between
callbacks, each time before the woken storage thread runs, so that never happens. The
storage thread then waited seconds to minutes for each call: at a thousand connections
`/health`'s storage ping took four seconds (bench/prometheus.py), and a loop made of
many short steps starved a single query for 45 s (bench/history_writes.py).

A password check at sign-in or an outbound request's reply would wait the same way. While work
is on a worker thread, the loop naps `NAP_S` every `EVERY_S`: asleep, it
has let go of the lock, and the waiting thread takes it. That costs the loop at most a
twentieth of its time, and only while a thread has work; the thread then gets the lock
within milliseconds.
"""

import asyncio
import time
from collections.abc import Callable
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")

EVERY_S = 0.002
NAP_S = 0.0001


class GilHandover:
    """Counts work in flight on one storage thread; naps the loop while there is some."""

    def __init__(self, *, every_s: float = EVERY_S, nap_s: float = NAP_S) -> None:
        self._every_s = every_s
        self._nap_s = nap_s
        self._in_flight = 0
        self._timer: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def started(self) -> None:
        """Work was handed to the thread (called on the event loop)."""
        self._in_flight += 1
        loop = asyncio.get_running_loop()
        if self._timer is None or self._loop is not loop:
            if self._timer is not None:
                self._timer.cancel()
            self._loop = loop
            self._timer = loop.call_later(self._every_s, self._nap)

    def finished(self) -> None:
        self._in_flight -= 1

    def _nap(self) -> None:
        if self._in_flight <= 0 or self._loop is None:
            self._timer = None
            return
        time.sleep(self._nap_s)  # asleep, the loop holds no lock: the thread takes it
        self._timer = self._loop.call_later(self._every_s, self._nap)


_shared = GilHandover()


async def to_thread(func: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
    """`asyncio.to_thread`, with the loop napping until the thread is done."""
    _shared.started()
    try:
        return await asyncio.to_thread(func, *args, **kwargs)
    finally:
        _shared.finished()
