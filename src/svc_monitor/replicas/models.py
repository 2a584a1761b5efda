"""What a replica says of itself in storage, and what the others make of it."""

from dataclasses import dataclass


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
