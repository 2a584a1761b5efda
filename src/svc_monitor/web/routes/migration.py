"""Migration: the four steps (configure, analyse, migrate, verify) between two connections,
each job's live progress, and its report (docs/features/migration.md).

The forms post what the API takes (the same request models, the same service), so a form
and `POST /api/migration/*` refuse the same things with the same words: a push connection
is offered in the picker but disabled, with its own message, and refused if posted.
Starting a job is for admins, as the API's routes are; execution and validation are Pro.
"""

from typing import Any, Literal

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse
from pydantic import BaseModel, ValidationError

from svc_monitor.errors import AppError, NotFound
from svc_monitor.licensing.dependencies import FeatureLocked
from svc_monitor.licensing.models import Feature
from svc_monitor.migration.models import Job
from svc_monitor.migration.schemas import (
    AnalysisCreate,
    AnalysisRead,
    ExecutionCreate,
    ExecutionRead,
    ValidationCreate,
    ValidationRead,
)
from svc_monitor.migration.service import MigrationService
from svc_monitor.web.dependencies import FromThisPage, Ui, UiDep
from svc_monitor.web.forms import read_form
from svc_monitor.web.pages import Page

PAGE = Page("migration", "/migration", "Migration", needs_connection=False)
router = APIRouter(include_in_schema=False)
FORM_BYTES = 4_096
Kind = Literal["analysis", "execution", "validation"]
READS: dict[str, Any] = {
    "analysis": AnalysisRead,
    "execution": ExecutionRead,
    "validation": ValidationRead,
}


def _service(ui: Ui) -> MigrationService:
    service: MigrationService = ui.request.app.state.registry.get(MigrationService)
    return service


def _locked(ui: Ui) -> str | None:
    license = ui.services.license
    if license.allows(Feature.MIGRATION_EXECUTION):
        return None
    return FeatureLocked(Feature.MIGRATION_EXECUTION, license.tier).message


@router.get("/migration")
async def migration_page(ui: UiDep) -> HTMLResponse:
    """The steps, and the newest jobs of each kind."""
    service = _service(ui)
    recent: list[Any] = []
    for kind in ("analysis", "execution", "validation"):
        recent += [_read(job) for job in await service.newest(kind, limit=10)]
    recent.sort(key=lambda r: r.createdAt, reverse=True)
    names = {c.id: c.name for c in ui.shell.connections}
    return ui.page(
        PAGE,
        "migration/page.html",
        recent=recent[:20],
        names=names,
        locked=_locked(ui),
    )


@router.get("/ui/migration/jobs/{kind}/{job_id}")
async def job_fragment(kind: str, job_id: str, ui: UiDep) -> HTMLResponse:
    """One job, as it is now: it asks again every second while it runs."""
    if kind not in READS:
        raise NotFound(f"No migration job kind '{kind}'")
    job = await _service(ui).get(kind, job_id)  # type: ignore[arg-type]
    return _job(ui, job)


@router.post("/ui/migration/{kind}", dependencies=[FromThisPage])
async def start_form(kind: str, request: Request, ui: UiDep) -> HTMLResponse:
    """Start an analysis, an execution or a validation from the page's form."""
    values = await read_form(request, limit=FORM_BYTES)
    service = _service(ui)
    ends = {
        "sourceConnectionId": values.get("source", ""),
        "targetConnectionId": values.get("target", ""),
    }
    try:
        if kind == "analysis":
            job = await service.start_analysis(_parsed(AnalysisCreate, ends))
        elif kind in ("execution", "validation"):
            locked = _locked(ui)
            if locked is not None:
                return ui.fragment("migration/job.html", error=locked, job=None)
            if kind == "execution":
                body = _parsed(
                    ExecutionCreate, {**ends, "overwrite": values.get("overwrite") == "on"}
                )
                job = await service.start_execution(body)
            else:
                latest = await service.newest("execution", limit=1)
                execution = latest[0].id if latest and latest[0].status == "completed" else None
                job = await service.start_validation(
                    _parsed(ValidationCreate, {**ends, "executionId": execution})
                )
        else:
            raise NotFound(f"No migration job kind '{kind}'")
    except AppError as exc:
        return ui.fragment("migration/job.html", error=exc.message, job=None)
    return _job(ui, job)


def _job(ui: Ui, job: Job) -> HTMLResponse:
    names = {c.id: c.name for c in ui.shell.connections}
    return ui.fragment("migration/job.html", error=None, job=_read(job), names=names)


def _read(job: Job) -> Any:
    return READS[job.kind].of(job)


class _FormError(AppError):
    status_code = 422


def _parsed(model: type[BaseModel], data: dict[str, Any]) -> Any:
    """The API's request model for the form; its first problem, naming the field."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise _FormError(f"{where}: {first['msg']}") from None
