"""The migration baseline: the source's memory, fragmentation and load before the copy.

It is the average of the source's stored memory snapshots over BASELINE_WINDOW_MS, taking
only the samples that carry a fragmentation ratio: a pushed instance that did not send
one stores it empty, and an average over those would mix two kinds of sample. Validation
compares the target against it.
"""

from collections.abc import Sequence
from statistics import fmean
from typing import Protocol

from svc_monitor.migration.models import Baseline

BASELINE_WINDOW_MS = 24 * 3_600_000


class MemorySample(Protocol):
    """One stored memory snapshot, as INFO history answers it."""

    @property
    def usedMemory(self) -> int | None: ...  # the API's field names
    @property
    def memFragmentationRatio(self) -> float | None: ...
    @property
    def opsPerSec(self) -> int | None: ...


def baseline(samples: Sequence[MemorySample], *, since_ms: int) -> Baseline:
    kept = [s for s in samples if s.memFragmentationRatio is not None]
    used = [s.usedMemory for s in kept if s.usedMemory is not None]
    ops = [s.opsPerSec for s in kept if s.opsPerSec is not None]
    return Baseline(
        samples=len(kept),
        used_memory=fmean(used) if used else None,
        fragmentation=fmean(s.memFragmentationRatio for s in kept if s.memFragmentationRatio)
        if kept
        else None,
        ops_per_sec=fmean(ops) if ops else None,
        since_ms=since_ms,
    )
