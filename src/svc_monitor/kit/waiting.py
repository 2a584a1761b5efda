"""Waiting with a timeout in long-running loops, without swallowing a cancellation."""

import asyncio
from collections.abc import Awaitable


async def wait_quietly(awaitable: Awaitable[object], timeout_s: float) -> bool:
    """Wait up to `timeout_s` for `awaitable`; True if it finished.

    Not `asyncio.timeout` or `wait_for`: these waits expire every second or so, and on
    Python 3.11 a cancellation arriving as one expires can come out as TimeoutError and be
    swallowed, which left the poll supervisor running after shutdown (seen in tests).
    `asyncio.wait` times out without cancelling anything, so a cancellation always
    reaches the caller.
    """
    waiter = asyncio.ensure_future(awaitable)
    try:
        done, _ = await asyncio.wait({waiter}, timeout=timeout_s)
    finally:
        waiter.cancel()
    return bool(done)
