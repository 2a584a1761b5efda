"""Plain values of the slow-log domain."""

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class EntryFilter:
    """Which stored log entries a read is about (all given conditions hold)."""

    since: int | None = None  # epoch ms, on the entry's start time, inclusive
    until: int | None = None
    command: str | None = None  # any case: compared upper-cased
    min_duration: int | None = None  # µs (bytes for the large-request/-reply logs)
