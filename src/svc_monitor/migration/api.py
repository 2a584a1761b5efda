"""Migration routes (under /api): analysis jobs (docs/features/migration.md)."""

from typing import Annotated

from fastapi import APIRouter, Query

from svc_monitor.api.error_responses import error_responses
from svc_monitor.migration.dependencies import MigrationDep
from svc_monitor.migration.schemas import AnalysisCreate, AnalysisRead

router = APIRouter(tags=["migration"])


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
async def list_analyses(
    migration: MigrationDep, limit: Annotated[int, Query(ge=1, le=100)] = 20
) -> list[AnalysisRead]:
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
