"""Live reads for a page, skipped while the chosen instance is known to be down.

A page asking a down instance for CLIENT LIST, MEMORY STATS and LATENCY LATEST would
wait out the connect timeout once per read; the shell already knows the instance did
not answer its last check, so the page says so at once and shows its stored history.
"""

from collections.abc import Awaitable, Callable
from typing import TypeVar

from svc_monitor.web.sections import Section, load
from svc_monitor.web.shell import Shell

T = TypeVar("T")


async def load_live(shell: Shell, read: Callable[[], Awaitable[T]]) -> Section[T]:
    """`load(read())`, unless the shell's last check found the instance unreachable."""
    chosen = shell.selected
    if chosen is not None and chosen.status == "disconnected":
        reason = chosen.error or "it did not answer the last check"
        return Section(problem="unavailable", message=f"{chosen.address}: {reason}")

    async def call() -> T:  # a read that fails before its first await is loaded too
        return await read()

    return await load(call())
