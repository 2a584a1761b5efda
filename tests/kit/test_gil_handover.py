"""A worker thread gets the interpreter lock back while the event loop is busy."""

import asyncio
import time

from svc_monitor.kit.gil_handover import to_thread
from tests.fixtures.busy_loop import busy_event_loop


class TestWorkerThreadsUnderLoad:
    async def test_blocking_calls_on_a_thread_return_at_once_while_the_loop_is_busy(self):
        """Each call lets go of the lock (as a password hash or a socket read does) and
        must win it back from the loop; without the loop's naps one waited seconds."""
        async with busy_event_loop():
            started = time.monotonic()
            async with asyncio.timeout(20):
                for _ in range(30):
                    await to_thread(time.sleep, 0.001)
            took = time.monotonic() - started
        assert took < 3
