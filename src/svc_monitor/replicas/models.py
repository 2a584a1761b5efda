"""What a replica says of itself in storage, and what the others make of it."""

from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class ReplicaRecord:
    """One svc-monitor process's row: written when it starts, refreshed by its
    heartbeat, deleted when it stops cleanly."""

    id: str
    address: str
    version: str
    started_at_ms: int
    heartbeat_at_ms: int
    polled_connections: int  # what it polled at its last heartbeat


@dataclass(frozen=True, slots=True)
class Replica:
    """A row as seen now by one replica: live while its heartbeat is within the timeout."""

    record: ReplicaRecord
    is_self: bool
    heartbeat_age_ms: int
    live: bool


class Ownership(Protocol):
    """Which polled connections this replica polls (replicas/ownership.py)."""

    def offer(self, candidates: frozenset[str]) -> None:
        """The polled connections, as the poll supervisor last read them."""
        ...

    def owned(self, candidates: Collection[str]) -> set[str]:
        """Which of `candidates` this replica is to poll now."""
        ...

    def fenced(self, connection_id: str) -> bool:
        """True for a polled connection this replica may not write or publish for."""
        ...

    def polled_elsewhere(self, connection_id: str) -> bool:
        """True for a polled connection another live replica held at the last round: its
        latest-poll views are read live here (not for one this replica is about to take)."""
        ...

    def on_change(self, callback: Callable[[], None]) -> None: ...

    async def holders(self) -> dict[str, list[str]]:
        """Replica id -> the connections it holds."""
        ...

    async def run(self) -> None: ...

    async def release(self) -> None:
        """A clean stop: hand everything over now."""
        ...
