"""Plain values of the client analytics domain."""

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SnapshotFilter:
    """Which snapshots of one connection a read is about (all given conditions hold)."""

    connection_id: str
    since: int | None = None
    until: int | None = None
    name: str | None = None
    user: str | None = None
    addr: str | None = None  # host:port, or a host alone for every port of it
