"""Migration jobs and what an analysis finds, as the service holds them
(docs/features/migration.md)."""

from dataclasses import dataclass, field
from typing import Literal

JobKind = Literal["analysis", "execution", "validation"]
JobStatus = Literal["pending", "running", "completed", "failed", "cancelled"]
FINISHED: frozenset[str] = frozenset({"completed", "failed", "cancelled"})
Severity = Literal["blocking", "warning", "info"]
Verdict = Literal["ready", "ready_with_warnings", "blocked"]


@dataclass(frozen=True, slots=True)
class Job:
    """One migration job as stored: its ends, where it is, and its report when done."""

    id: str
    kind: JobKind
    source_id: str
    target_id: str
    status: JobStatus
    created_at: int  # epoch ms
    updated_at: int
    completed_at: int | None
    progress: float  # 0-100
    error: str | None
    params: dict[str, object]
    # What a job needs to go on where it stopped (an execution's cursors and counts).
    state: dict[str, object]
    report: dict[str, object] | None  # the API's JSON of the finished job's report

    @property
    def finished(self) -> bool:
        return self.status in FINISHED


@dataclass(frozen=True, slots=True)
class Finding:
    """One thing the analysis found: how much it matters, what shows it, what to do."""

    code: str  # stable, for scripts: "hash_field_expiry_unsupported", ...
    severity: Severity
    title: str
    evidence: str
    fix: str


@dataclass(frozen=True, slots=True)
class FunctionLibrary:
    name: str
    engine: str  # LUA
    functions: int
    code: str = field(repr=False)


@dataclass(frozen=True, slots=True)
class EndProfile:
    """What the analysis read of one end (ends.py)."""

    name: str
    address: str
    engine: Literal["valkey", "redis"]
    version: str
    release: tuple[int, int, int]
    cluster: bool
    primaries: int  # primaries holding slots; 1 for a standalone server
    databases: dict[int, int]  # keys per database (INFO keyspace; summed over primaries)
    expires: int  # keys with a TTL, over every database
    volatile_hash_keys: int | None  # hashes with field TTLs (INFO keyspace), None: not told
    hash_field_expiry: bool  # the engine has HEXPIRE
    has_functions: bool  # the engine has FUNCTION (Redis 7+, every Valkey)
    modules: dict[str, int]  # name -> version, the built-in lua module left out
    libraries: tuple[FunctionLibrary, ...]
    cached_scripts: int
    acl_users: tuple[str, ...] | None  # None: ACL LIST refused
    search_indexes: tuple[str, ...]
    maxmemory: int  # summed over the primaries; 0 means no limit
    maxmemory_policy: str | None
    aof: bool
    rdb_save: str | None  # CONFIG GET save; None when CONFIG is refused
    used_memory: int  # summed over the primaries
    used_memory_startup: int
    fragmentation: float | None

    @property
    def keys(self) -> int:
        return sum(self.databases.values())


@dataclass(frozen=True, slots=True)
class Baseline:
    """The source's memory before the migration: the average of its stored memory
    snapshots that carry a fragmentation ratio (baseline.py)."""

    samples: int
    used_memory: float | None
    fragmentation: float | None
    ops_per_sec: float | None
    since_ms: int
