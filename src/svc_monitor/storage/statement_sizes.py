"""How many rows each INSERT of a batch carries, on SQLite.

Many rows to a statement: the driver lets go of the interpreter lock around every
statement it runs and must win it back (kit/gil_handover.py), so a statement a row
costs a thousand hand-overs for a thousand rows, where a few statements cost a few. The
sizes come from a small fixed set, largest first, because SQLite prepares each distinct
statement text once and caches it: preparing a 100-row statement costs as much as running
it.
"""

from collections.abc import Sequence


def statement_sizes(rows: int, sizes: Sequence[int]) -> list[int]:
    """Rows per statement for a batch of `rows`, each from `sizes` (descending, ending in
    1), greedily: 1,300 rows over powers of two up to 512 are 512, 512, 256, 16, 4."""
    chunks: list[int] = []
    for size in sizes:
        count, rows = divmod(rows, size)
        chunks.extend([size] * count)
    return chunks
