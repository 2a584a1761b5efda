"""Migration routes (under /api): analysis, execution and validation jobs
(docs/features/migration.md)."""

from typing import Annotated

from fastapi import APIRouter, Query

from svc_monitor.api.error_responses import error_responses
from svc_monitor.licensing.dependencies import RequireFeature
from svc_monitor.licensing.models import Feature
from svc_monitor.migration.dependencies import MigrationDep
from svc_monitor.migration.schemas import (
    AnalysisCreate,
    AnalysisRead,
    ExecutionCreate,
    ExecutionRead,
    ValidationCreate,
    ValidationRead,
)

router = APIRouter(tags=["migration"])
# Copying and validating are Pro; the analysis is for everyone.
paid = APIRouter(
    tags=["migration"], dependencies=[RequireFeature(Feature.MIGRATION_EXECUTION).depends]
)
Limit = Annotated[int, Query(ge=1, le=100)]


@router.post(
    "/migration/analysis",
    status_code=202,
    response_model=AnalysisRead,
    responses=error_responses(403, 422),
)
async def start_analysis(body: AnalysisCreate, migration: MigrationDep) -> AnalysisRead:
    """Start an analysis of migrating the source connection's keys into the target's.

    Read-only on both ends, paced like key analytics, and read on a replica of the source
    when one is online. Answers at once with the job (`pending`); read it with
    `GET /api/migration/analysis/{id}` until its status is `completed` (with the report),
    `failed` (with the error) or `cancelled`. A push connection is refused as either end
    (422 naming the field), as are the same connection twice and an unknown id."""
    return AnalysisRead.of(await migration.start_analysis(body))


@router.get(
    "/migration/analysis", response_model=list[AnalysisRead], responses=error_responses(403, 422)
)
async def list_analyses(migration: MigrationDep, limit: Limit = 20) -> list[AnalysisRead]:
    """The newest analyses first, each with its report when it completed."""
    return [AnalysisRead.of(job) for job in await migration.newest("analysis", limit=limit)]


@router.get(
    "/migration/analysis/{analysis_id}",
    response_model=AnalysisRead,
    responses=error_responses(403, 404),
)
async def get_analysis(analysis_id: str, migration: MigrationDep) -> AnalysisRead:
    """One analysis: its status and progress (0-100) while it runs; its report (verdict,
    both ends, the sample and its error bound, types, TTLs, commands, baseline, estimate
    and every finding with its evidence and fix) once it completed."""
    return AnalysisRead.of(await migration.get("analysis", analysis_id))


@router.delete(
    "/migration/analysis/{analysis_id}",
    response_model=AnalysisRead,
    responses=error_responses(403, 404, 409),
)
async def cancel_analysis(analysis_id: str, migration: MigrationDep) -> AnalysisRead:
    """Cancel a pending or running analysis; 409 when it has already ended."""
    return AnalysisRead.of(await migration.cancel("analysis", analysis_id))


@paid.post(
    "/migration/execution",
    status_code=202,
    response_model=ExecutionRead,
    responses=error_responses(403, 409, 422),
)
async def start_execution(body: ExecutionCreate, migration: MigrationDep) -> ExecutionRead:
    """Start copying the source's keys into the target (Pro).

    Never writes to the source. Refused with 409 while the target holds keys (unless
    `overwrite`), while another execution copies into the same target, and when the
    set-up blocks a copy (a cluster into a standalone server, several databases into a
    cluster, hash-field TTLs or a module the target lacks, too little maxmemory). Paced by
    the source's own load; resumed after a restart of svc-monitor where it stopped."""
    return ExecutionRead.of(await migration.start_execution(body))


@paid.get(
    "/migration/execution", response_model=list[ExecutionRead], responses=error_responses(403, 422)
)
async def list_executions(migration: MigrationDep, limit: Limit = 20) -> list[ExecutionRead]:
    """The newest executions first."""
    return [ExecutionRead.of(job) for job in await migration.newest("execution", limit=limit)]


@paid.get(
    "/migration/execution/{execution_id}",
    response_model=ExecutionRead,
    responses=error_responses(403, 404),
)
async def get_execution(execution_id: str, migration: MigrationDep) -> ExecutionRead:
    """One execution: while it runs its phase and live counts (keys, bytes, rate, ETA, what
    it waits for); once it completed its report."""
    return ExecutionRead.of(await migration.get("execution", execution_id))


@paid.delete(
    "/migration/execution/{execution_id}",
    response_model=ExecutionRead,
    responses=error_responses(403, 404, 409),
)
async def cancel_execution(execution_id: str, migration: MigrationDep) -> ExecutionRead:
    """Stop a pending or running execution; what it copied stays on the target. 409 once
    it has ended."""
    return ExecutionRead.of(await migration.cancel("execution", execution_id))


@paid.post(
    "/migration/validation",
    status_code=202,
    response_model=ValidationRead,
    responses=error_responses(403, 404, 422),
)
async def start_validation(body: ValidationCreate, migration: MigrationDep) -> ValidationRead:
    """Start comparing the target with the source (Pro): key counts per database and type,
    net of keys that expire meanwhile; a sample compared value by value; the target's
    memory against the estimate and the baseline. Read-only on both ends."""
    return ValidationRead.of(await migration.start_validation(body))


@paid.get(
    "/migration/validation",
    response_model=list[ValidationRead],
    responses=error_responses(403, 422),
)
async def list_validations(migration: MigrationDep, limit: Limit = 20) -> list[ValidationRead]:
    """The newest validations first."""
    return [ValidationRead.of(job) for job in await migration.newest("validation", limit=limit)]


@paid.get(
    "/migration/validation/{validation_id}",
    response_model=ValidationRead,
    responses=error_responses(403, 404),
)
async def get_validation(validation_id: str, migration: MigrationDep) -> ValidationRead:
    """One validation, with its report (every difference listed) once it completed."""
    return ValidationRead.of(await migration.get("validation", validation_id))


@paid.delete(
    "/migration/validation/{validation_id}",
    response_model=ValidationRead,
    responses=error_responses(403, 404, 409),
)
async def cancel_validation(validation_id: str, migration: MigrationDep) -> ValidationRead:
    """Cancel a pending or running validation; 409 once it has ended."""
    return ValidationRead.of(await migration.cancel("validation", validation_id))
