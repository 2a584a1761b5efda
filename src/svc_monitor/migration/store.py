"""Migration jobs: one row per analysis, execution or validation, kept across restarts.

A job's `state` is what it needs to go on where it stopped; its `report` the JSON of its
finished report (schemas.py). Jobs are few and small: they are kept until deleted with
their connections' history (no retention sweep).
"""

from typing import Any

from sqlalchemy import JSON, BigInteger, Column, Float, Index, Row, String, Table, Text, select

from svc_monitor.migration.models import Job, JobKind
from svc_monitor.storage.columns import CONNECTION_ID_LENGTH
from svc_monitor.storage.database import Database
from svc_monitor.storage.metadata import metadata

migration_jobs = Table(
    "migration_jobs",
    metadata,
    Column("id", String(36), primary_key=True),
    Column("kind", String(16), nullable=False),
    Column("source_id", String(CONNECTION_ID_LENGTH), nullable=False),
    Column("target_id", String(CONNECTION_ID_LENGTH), nullable=False),
    Column("status", String(16), nullable=False),
    Column("created_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
    Column("completed_at", BigInteger),
    Column("progress", Float, nullable=False),
    Column("error", Text),
    Column("params", JSON, nullable=False),
    Column("state", JSON, nullable=False),
    Column("report", JSON),
    Index("ix_migration_jobs_kind_created", "kind", "created_at"),
)


class MigrationStore:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def insert(self, job: Job) -> None:
        await self._db.execute(migration_jobs.insert().values(**_row(job)))

    async def save(self, job: Job) -> None:
        row = _row(job)
        del row["id"]
        await self._db.execute(
            migration_jobs.update().where(migration_jobs.c.id == job.id).values(**row)
        )

    async def claim(self, job: Job, *, at: int) -> bool:
        """Take over `job` as this process's, if no other process took it since it was
        read (its row still has the `updated_at` read): True when taken."""
        t = migration_jobs.c
        taken = await self._db.execute(
            migration_jobs.update()
            .where(t.id == job.id, t.updated_at == job.updated_at)
            .values(updated_at=at)
        )
        return taken == 1

    async def get(self, job_id: str) -> Job | None:
        row = await self._db.fetch_one(select(migration_jobs).where(migration_jobs.c.id == job_id))
        return None if row is None else _job(row)

    async def newest(self, kind: JobKind, *, limit: int) -> list[Job]:
        t = migration_jobs.c
        query = (
            select(migration_jobs)
            .where(t.kind == kind)
            .order_by(t.created_at.desc(), t.id)
            .limit(limit)
        )
        return [_job(r) for r in await self._db.fetch_all(query)]

    async def unfinished(self) -> list[Job]:
        t = migration_jobs.c
        query = select(migration_jobs).where(t.status.in_(("pending", "running")))
        return [_job(r) for r in await self._db.fetch_all(query)]


def _row(job: Job) -> dict[str, Any]:
    return {
        "id": job.id,
        "kind": job.kind,
        "source_id": job.source_id,
        "target_id": job.target_id,
        "status": job.status,
        "created_at": job.created_at,
        "updated_at": job.updated_at,
        "completed_at": job.completed_at,
        "progress": job.progress,
        "error": job.error,
        "params": job.params,
        "state": job.state,
        "report": job.report,
    }


def _job(row: Row[Any]) -> Job:
    return Job(
        id=row.id,
        kind=row.kind,
        source_id=row.source_id,
        target_id=row.target_id,
        status=row.status,
        created_at=row.created_at,
        updated_at=row.updated_at,
        completed_at=row.completed_at,
        progress=row.progress,
        error=row.error,
        params=dict(row.params or {}),
        state=dict(row.state or {}),
        report=row.report,
    )
