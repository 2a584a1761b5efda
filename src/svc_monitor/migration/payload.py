"""Which DUMP payloads a server can RESTORE: the RDB version each release writes.

A DUMP payload ends with the RDB version that wrote it (two bytes) and a CRC64; RESTORE
refuses a version newer than its own ("DUMP payload version or checksum are wrong"). So
Valkey 9 (RDB 80) to Redis 7.0 (RDB 10) cannot go by DUMP/RESTORE, and the copy writes
each type by its own commands instead (copier.py). Valkey left the versions 12 to 79 to
Redis's future formats and refuses them, so Redis 7.4 and 8 payloads (RDB 12) do not
restore on Valkey either. The analysis predicts from this table; the execution tries
RESTORE and falls back on the refusal, so a release missing here costs one failed call.
"""

from typing import Literal

# (first release, RDB version it writes), newest first per engine.
_WRITES: dict[str, list[tuple[tuple[int, int], int]]] = {
    "redis": [((7, 4), 12), ((7, 2), 11), ((7, 0), 10), ((5, 0), 9)],
    "valkey": [((9, 0), 80), ((7, 2), 11)],
}
FOREIGN = range(12, 80)  # versions Valkey 9+ will not read (module docstring)


def writes(engine: Literal["valkey", "redis"], release: tuple[int, int, int]) -> int | None:
    """The RDB version `engine` at `release` writes, None when older than the table."""
    for first, version in _WRITES[engine]:
        if release[:2] >= first:
            return version
    return None


def accepts(
    engine: Literal["valkey", "redis"], release: tuple[int, int, int], version: int
) -> bool:
    """Whether the target RESTOREs a payload of RDB `version` (module docstring)."""
    own = writes(engine, release)
    if own is None:
        return False
    if own >= 80 and version in FOREIGN:
        return False
    return version <= own
