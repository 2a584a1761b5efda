"""Request and response models of /api/migration/* (docs/features/migration.md).

A finished job's report is stored as the JSON of its response model, so a report read
back after a restart is the one the job wrote.
"""

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from svc_monitor.migration.models import Finding, Job

SAMPLE_DEFAULT = 10_000


class MigrationEnds(BaseModel):
    """The two connections a job is about (the picker: service.py)."""

    model_config = ConfigDict(extra="forbid")  # the jobs' request models inherit it

    sourceConnectionId: str = Field(min_length=1, max_length=64)
    targetConnectionId: str = Field(min_length=1, max_length=64)


class AnalysisCreate(MigrationEnds):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "sourceConnectionId": "env-default",
                    "targetConnectionId": "c2",
                    "sampleSize": 10_000,
                }
            ]
        },
    )

    sampleSize: int = Field(
        SAMPLE_DEFAULT,
        ge=1_000,
        le=50_000,
        description="keys sampled from the source (split across its primaries and databases)",
    )


class EndRead(BaseModel):
    connectionId: str
    name: str
    address: str
    engine: Literal["valkey", "redis"]
    version: str
    cluster: bool
    primaries: int
    databases: dict[str, int] = Field(description="keys per database (INFO keyspace)")
    keys: int
    expires: int
    volatileHashKeys: int | None = Field(description="hashes with field TTLs; null: not told")
    hashFieldExpiry: bool = Field(description="the engine has HEXPIRE")
    functions: bool = Field(description="the engine has FUNCTION")
    modules: dict[str, int]
    functionLibraries: list[str]
    cachedScripts: int
    aclUsers: list[str] | None = Field(description="null: ACL USERS was refused")
    searchIndexes: list[str]
    maxmemory: int = Field(description="bytes, summed over the primaries; 0: no limit")
    maxmemoryPolicy: str | None
    appendonly: bool
    save: str | None = Field(description="CONFIG GET save; null: CONFIG was refused")
    usedMemory: int
    fragmentation: float | None


class TypeRead(BaseModel):
    type: str
    sampledKeys: int
    share: float = Field(description="of the sampled keys, 0-1")
    estimatedKeys: int
    sampledMemoryBytes: int
    estimatedMemoryBytes: int


class TtlBucketRead(BaseModel):
    bucket: Literal["none", "<1h", "1h-24h", "1d-7d", ">7d"]
    sampledKeys: int
    share: float


class SampleRead(BaseModel):
    requested: int
    sampledKeys: int
    totalKeys: int
    readFrom: list[str] = Field(description="the servers the keys were read on")
    onReplica: bool = Field(description="every part of the sample was read on a replica")
    typeShareErrorPoints: float = Field(
        description="95 % bound of a type's share, in percentage points (finite population)"
    )
    memoryErrorPercent: float | None = Field(
        description="95 % bound of the estimated memory, in percent of it"
    )


class CommandRead(BaseModel):
    command: str
    calls: int
    onTarget: bool


class BaselineRead(BaseModel):
    samples: int = Field(description="memory snapshots that carry a fragmentation ratio")
    sinceMs: int
    usedMemory: float | None
    fragmentation: float | None
    opsPerSec: float | None


class EstimateRead(BaseModel):
    method: Literal["dump_restore", "type_aware"]
    payloadVersion: int | None = Field(description="RDB version of the source's DUMP payloads")
    neededMemoryBytes: int
    neededMemoryBasis: str
    keysPerSecond: float | None
    bytesPerSecond: float | None
    durationSeconds: float | None
    basis: str


class MigrationFindingRead(BaseModel):
    code: str
    severity: Literal["blocking", "warning", "info"]
    title: str
    evidence: str
    fix: str

    @classmethod
    def of(cls, f: Finding) -> "MigrationFindingRead":
        return cls(code=f.code, severity=f.severity, title=f.title, evidence=f.evidence, fix=f.fix)


class AnalysisReport(BaseModel):
    verdict: Literal["ready", "ready_with_warnings", "blocked"]
    source: EndRead
    target: EndRead
    sample: SampleRead
    types: list[TypeRead]
    ttl: list[TtlBucketRead]
    commands: list[CommandRead]
    baseline: BaselineRead
    estimate: EstimateRead
    findings: list[MigrationFindingRead]


class JobRead(BaseModel):
    id: str
    kind: Literal["analysis", "execution", "validation"]
    status: Literal["pending", "running", "completed", "failed", "cancelled"]
    sourceConnectionId: str
    targetConnectionId: str
    createdAt: int = Field(description="epoch ms")
    updatedAt: int
    completedAt: int | None
    progress: float = Field(description="0-100")
    error: str | None


class AnalysisRead(JobRead):
    sampleSize: int
    report: AnalysisReport | None = Field(description="set once the analysis completed")

    @classmethod
    def of(cls, job: Job) -> "AnalysisRead":
        return cls(
            **_job_fields(job),
            sampleSize=int(str(job.params.get("sampleSize", SAMPLE_DEFAULT))),
            report=AnalysisReport.model_validate(job.report) if job.report else None,
        )


class ExecutionCreate(MigrationEnds):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "sourceConnectionId": "env-default",
                    "targetConnectionId": "c2",
                    "overwrite": False,
                }
            ]
        },
    )

    overwrite: bool = Field(
        False, description="copy into a target that holds keys, replacing those of the same name"
    )
    catchUp: bool = Field(True, description="compare every key again after the copy")
    method: Literal["auto", "type_aware"] = Field(
        "auto",
        description="auto: DUMP/RESTORE, falling back to the type-aware copy when the target "
        "refuses the source's payloads; type_aware: always type by type",
    )


class ExecutionProgress(BaseModel):
    phase: str = Field(description="functions, copy, catchup, prune or done")
    method: str
    totalKeys: int
    copiedKeys: int
    copiedBytes: int
    expiredKeys: int
    skippedKeys: int
    checkedKeys: int
    recopiedKeys: int
    keysPerSecond: float | None
    bytesPerSecond: float | None
    etaSeconds: float | None
    waitingFor: str | None = Field(description="why the copy waits (the source's pressure)")
    resumes: int


class ExecutionReport(BaseModel):
    method: str
    totalKeys: int
    copiedKeys: int
    copiedBytes: int
    expiredKeys: int = Field(description="gone or expired before they were written")
    skippedKeys: int = Field(description="keys of a module type in a type-aware copy")
    skippedExamples: list[str]
    checkedKeys: int = Field(description="keys the catch-up pass compared")
    recopiedKeys: int = Field(description="keys the catch-up pass copied again")
    removedKeys: int = Field(description="target keys deleted on the source during the copy")
    functionsLoaded: list[str]
    activeSeconds: float
    pressureSeconds: float = Field(description="time waited while the source was busy")
    keysPerSecond: float | None
    bytesPerSecond: float | None
    resumes: int = Field(description="times the job resumed after a restart")


class ExecutionRead(JobRead):
    overwrite: bool
    catchUp: bool
    progressDetail: ExecutionProgress | None
    report: ExecutionReport | None

    @classmethod
    def of(cls, job: Job) -> "ExecutionRead":
        return cls(
            **_job_fields(job),
            overwrite=bool(job.params.get("overwrite")),
            catchUp=bool(job.params.get("catchUp", True)),
            progressDetail=_progress(job.state) if job.state.get("counts") else None,
            report=ExecutionReport.model_validate(job.report) if job.report else None,
        )


class ValidationCreate(MigrationEnds):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "sourceConnectionId": "env-default",
                    "targetConnectionId": "c2",
                    "sampleSize": 1_000,
                }
            ]
        },
    )

    executionId: str | None = Field(None, max_length=64, description="the copy validated")
    analysisId: str | None = Field(None, max_length=64, description="for its memory estimate")
    sampleSize: int = Field(1_000, ge=10, le=10_000, description="keys compared value by value")
    ttlToleranceMs: int = Field(1_000, ge=0, le=60_000)


class CountRead(BaseModel):
    db: int
    type: str
    source: int
    target: int
    difference: int


class DifferenceRead(BaseModel):
    kind: Literal["count", "value"]
    db: int
    key: str | None
    problem: str


class SampleCheckRead(BaseModel):
    checked: int
    matched: int
    goneMeanwhile: int
    unchecked: int = Field(description="module-typed keys across engines, not comparable")


class MemoryCheckRead(BaseModel):
    targetUsedMemory: int
    targetFragmentation: float | None
    estimatedBytes: int | None
    baselineUsedMemory: float | None
    baselineFragmentation: float | None
    baselineSamples: int
    ratioToBaseline: float | None
    status: Literal["normal", "elevated", "high", "unavailable"]


class ValidationReport(BaseModel):
    differenceCount: int
    differences: list[DifferenceRead]
    counts: list[CountRead]
    expiredDuringCopy: int | None
    expiringDuringCheck: dict[str, int]
    sample: SampleCheckRead
    memory: MemoryCheckRead


class ValidationRead(JobRead):
    executionId: str | None
    report: ValidationReport | None

    @classmethod
    def of(cls, job: Job) -> "ValidationRead":
        execution = job.params.get("executionId")
        return cls(
            **_job_fields(job),
            executionId=str(execution) if execution else None,
            report=ValidationReport.model_validate(job.report) if job.report else None,
        )


def _job_fields(job: Job) -> dict[str, Any]:
    return {
        "id": job.id,
        "kind": job.kind,
        "status": job.status,
        "sourceConnectionId": job.source_id,
        "targetConnectionId": job.target_id,
        "createdAt": job.created_at,
        "updatedAt": job.updated_at,
        "completedAt": job.completed_at,
        "progress": job.progress,
        "error": job.error,
    }


def _progress(state: dict[str, Any]) -> ExecutionProgress:
    c = state["counts"]
    active = float(state.get("activeSeconds", 0.0))
    done = c["copied"] + c["expired"] + c["skipped"]
    rate = done / active if active > 0 and done else None
    left = max(0, int(state.get("totalKeys", 0)) - done)
    return ExecutionProgress(
        phase=str(state.get("phase")),
        method=str(state.get("method")),
        totalKeys=int(state.get("totalKeys", 0)),
        copiedKeys=c["copied"],
        copiedBytes=c["bytes"],
        expiredKeys=c["expired"],
        skippedKeys=c["skipped"],
        checkedKeys=c["checked"],
        recopiedKeys=c["recopied"],
        keysPerSecond=rate,
        bytesPerSecond=c["bytes"] / active if active > 0 else None,
        etaSeconds=left / rate if rate and state.get("phase") == "copy" else None,
        waitingFor=state.get("waitingFor"),
        resumes=int(state.get("resumes", 0)),
    )
