"""Request and response models of /api/migration/* (docs/features/migration.md).

A finished job's report is stored as the JSON of its response model, so a report read
back after a restart is the one the job wrote.
"""

from typing import Literal

from pydantic import BaseModel, Field

from svc_monitor.migration.models import Finding, Job

SAMPLE_DEFAULT = 10_000


class AnalysisCreate(BaseModel):
    sourceConnectionId: str = Field(min_length=1, max_length=64)
    targetConnectionId: str = Field(min_length=1, max_length=64)
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


class FindingRead(BaseModel):
    code: str
    severity: Literal["blocking", "warning", "info"]
    title: str
    evidence: str
    fix: str

    @classmethod
    def of(cls, f: Finding) -> "FindingRead":
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
    findings: list[FindingRead]


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
            id=job.id,
            kind=job.kind,
            status=job.status,
            sourceConnectionId=job.source_id,
            targetConnectionId=job.target_id,
            createdAt=job.created_at,
            updatedAt=job.updated_at,
            completedAt=job.completed_at,
            progress=job.progress,
            error=job.error,
            sampleSize=int(str(job.params.get("sampleSize", SAMPLE_DEFAULT))),
            report=AnalysisReport.model_validate(job.report) if job.report else None,
        )
