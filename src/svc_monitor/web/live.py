"""Live reads for a page, skipped while the chosen instance is known to be down.

A page asking a down instance for CLIENT LIST, MEMORY STATS and LATENCY LATEST would
wait out the connect timeout once per read; the shell already knows the instance did
not answer its last check, so the page says so at once and shows its stored history.
A push connection is never asked at all: its metrics arrive over OTLP.
"""

from collections.abc import Awaitable, Callable
from typing import TypeVar

from svc_monitor.connections.service import NeedsLiveConnection
from svc_monitor.web.sections import Section, load
from svc_monitor.web.shell import Shell

T = TypeVar("T")


async def load_live(shell: Shell, read: Callable[[], Awaitable[T]]) -> Section[T]:
    """`load(read())`, unless the shell's last check found the instance unreachable or
    the connection is pushed (nothing to dial)."""
    if shell.connection is not None and shell.connection.pushed:
        return Section.unsupported(NeedsLiveConnection(shell.connection).message)
    chosen = shell.selected
    if chosen is not None and chosen.status == "disconnected":
        reason = chosen.error or "it did not answer the last check"
        return Section(problem="unavailable", message=f"{chosen.address}: {reason}")

    async def call() -> T:  # a read that fails before its first await is loaded too
        return await read()

    return await load(call())


def pushed(shell: Shell) -> bool:
    """Whether the chosen connection is an OTLP push connection, which no command reaches:
    live-only pages show shell/needs_live.html instead of asking it."""
    return shell.connection is not None and shell.connection.pushed
