"""Plain values the metrics domain hands to other domains."""

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class MemoryBucket:
    """Memory snapshots of one time bucket, averaged; None where no snapshot had the field
    (a push connection that does not push it, the first CPU sample after a start)."""

    t: int  # mean capture time of the bucket's snapshots, epoch ms
    used_memory: float | None
    maxmemory: float | None  # the largest in the bucket
    ops_per_sec: float | None
    cpu_total: float | None  # cpu_sys_percent + cpu_user_percent
    mem_fragmentation_ratio: float | None
