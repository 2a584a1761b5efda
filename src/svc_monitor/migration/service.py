"""Migration jobs: the picker, and the analysis, execution and validation jobs started,
read, cancelled and, after a restart, settled (docs/features/migration.md#jobs).

The picker's rules (pick): both connections exist, they differ, and neither is a push
connection, which svc-monitor only receives metrics from: it cannot read or write its
keys, so it is refused with a message of its own naming the field.

As the service starts (`settle`, the part's task), a job no process runs any more is
claimed by one process: on storage no other process shares (memory, SQLite), every
unfinished job; on shared storage a job whose row was not written for STALE_MS, or that
a stop of svc-monitor left `pending`. Then an execution is resumed where its state says
it stopped; an analysis or a validation, cheap to run again, is marked failed with the
reason.
"""

import asyncio
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from svc_monitor.connections.models import Connection
from svc_monitor.connections.service import ConnectionNotFound, ConnectionService
from svc_monitor.errors import Conflict, NotFound, Unprocessable
from svc_monitor.event_types.migration import MigrationJobCompleted, MigrationJobFailed
from svc_monitor.events import EventBus
from svc_monitor.migration.analysis import Analysis, MeasuredRate, MemorySamples
from svc_monitor.migration.execution import Execution
from svc_monitor.migration.jobs import (
    HEARTBEAT_S,
    INTERRUPTED,
    STALE_MS,
    STOPPED,
    JobContext,
    JobRunner,
)
from svc_monitor.migration.models import Job, JobKind
from svc_monitor.migration.schemas import AnalysisCreate, ExecutionCreate, ValidationCreate
from svc_monitor.migration.store import MigrationStore
from svc_monitor.migration.validation import Validation
from svc_monitor.pipe.live_view import LiveView

logger = logging.getLogger(__name__)


class JobNotFound(NotFound):
    pass


class PushEnd(Unprocessable):
    """A push connection picked as a migration end."""

    def __init__(self, connection: Connection, field: str) -> None:
        super().__init__(
            f"'{connection.name}' is a push connection: svc-monitor only receives its metrics "
            "over OTLP and cannot read or write its keys, so it cannot be a migration "
            "source or target. Pick a polled connection.",
            field=field,
        )


# Writes an activity-log entry of svc-monitor's own: (action, job id, details).
Record = Callable[[str, str, dict[str, object]], Awaitable[None]]


@dataclass(eq=False)
class MigrationService:
    store: MigrationStore
    connections: ConnectionService
    live_state: LiveView
    memory_samples: MemorySamples
    bus: EventBus
    record: Record
    clock: Callable[[], float] = time.time
    pressure_wait_s: float = 1.0
    # Storage several processes share (PostgreSQL, Turso): a job may run in another one.
    shared: bool = False
    _runner: JobRunner = field(init=False)

    def __post_init__(self) -> None:
        self._runner = JobRunner(self.store, self._now_ms, self._ended)

    async def _ended(self, job: Job) -> None:
        """A job's end: its event (migration.completed / .failed) and an activity-log
        entry. A job cancelled by a user has its DELETE in the log already."""
        if job.status not in ("completed", "failed"):
            return
        summary = summarise(job)
        at = job.completed_at or self._now_ms()
        common = {
            "connection_id": job.source_id,
            "job_id": job.id,
            "kind": job.kind,
            "target_connection_id": job.target_id,
            "summary": summary,
            "error": job.error,
            "at_ms": at,
        }
        if job.status == "completed":
            self.bus.publish(MigrationJobCompleted(**common))  # type: ignore[arg-type]
        else:
            self.bus.publish(MigrationJobFailed(**common))  # type: ignore[arg-type]
        details: dict[str, object] = {
            "source": job.source_id,
            "target": job.target_id,
            "summary": summary,
        }
        if job.error:
            details["error"] = job.error
        await self.record(f"migration.{job.kind}.{job.status}", job.id, details)

    def _now_ms(self) -> int:
        return int(self.clock() * 1000)

    # --- the picker ---

    async def pick(self, source_id: str, target_id: str) -> tuple[Connection, Connection]:
        """The two ends of a job (module docstring); 422 naming the field otherwise."""
        if source_id == target_id:
            raise Unprocessable(
                "Source and target must be different connections", field="targetConnectionId"
            )
        picked = []
        for connection_id, name in (
            (source_id, "sourceConnectionId"),
            (target_id, "targetConnectionId"),
        ):
            try:
                connection = await self.connections.get(connection_id)
            except ConnectionNotFound:
                raise Unprocessable(
                    f"No connection has the id '{connection_id}'", field=name
                ) from None
            if connection.pushed:
                raise PushEnd(connection, name)
            picked.append(connection)
        return picked[0], picked[1]

    # --- starting ---

    async def start_analysis(self, body: AnalysisCreate) -> Job:
        source, target = await self.pick(body.sourceConnectionId, body.targetConnectionId)
        job = await self._new("analysis", source, target, body.model_dump())
        self._start(job, source, target)
        return job

    async def start_execution(self, body: ExecutionCreate) -> Job:
        source, target = await self.pick(body.sourceConnectionId, body.targetConnectionId)
        for job in await self.store.unfinished():
            if job.kind == "execution" and job.target_id == target.id:
                raise Conflict(f"The execution '{job.id}' is already copying into this target")
        await self._execution().preflight(source, target, overwrite=body.overwrite)
        job = await self._new("execution", source, target, body.model_dump())
        self._start(job, source, target)
        return job

    async def start_validation(self, body: ValidationCreate) -> Job:
        source, target = await self.pick(body.sourceConnectionId, body.targetConnectionId)
        params = body.model_dump()
        if body.executionId is not None:
            execution = await self.get("execution", body.executionId)
            params["expiredDuringCopy"] = (execution.report or {}).get("expiredKeys")
        if body.analysisId is not None:
            analysis = await self.get("analysis", body.analysisId)
            estimate = (analysis.report or {}).get("estimate")
            if isinstance(estimate, dict):
                params["estimateBytes"] = estimate.get("neededMemoryBytes")
        job = await self._new("validation", source, target, params)
        self._start(job, source, target)
        return job

    # --- reading and cancelling ---

    async def get(self, kind: JobKind, job_id: str) -> Job:
        job = await self.store.get(job_id)
        if job is None or job.kind != kind:
            raise JobNotFound(f"No migration {kind} has the id '{job_id}'")
        return job

    async def newest(self, kind: JobKind, *, limit: int) -> list[Job]:
        return await self.store.newest(kind, limit=limit)

    async def cancel(self, kind: JobKind, job_id: str) -> Job:
        job = await self.get(kind, job_id)
        if job.finished:
            raise Conflict(f"The {kind} '{job_id}' has already {job.status}")
        await self._runner.cancel(job_id)
        current = await self.get(kind, job_id)
        if not current.finished:  # not running here: left by a stopped process
            current = await self._runner.finish(current, "cancelled", error=None)
        return current

    # --- the lifecycle ---

    async def settle(self) -> None:
        """The jobs no process runs any more (module docstring): at start, and every
        HEARTBEAT_S on shared storage, where another replica may have been killed."""
        stale_before = self._now_ms() - STALE_MS
        for job in await self.store.unfinished():
            if self._runner.running(job.id):
                continue
            orphaned = (
                not self.shared or job.state.get(INTERRUPTED) or job.updated_at < stale_before
            )
            if not orphaned:
                continue  # another replica runs it
            if not await self.store.claim(job, at=self._now_ms()):
                continue
            claimed = await self.store.get(job.id)
            if claimed is None:
                continue
            if claimed.kind != "execution":
                await self._runner.finish(claimed, "failed", error=STOPPED)
                continue
            try:
                source, target = await self.pick(claimed.source_id, claimed.target_id)
            except (Unprocessable, NotFound) as exc:
                await self._runner.finish(claimed, "failed", error=exc.message)
                continue
            logger.info("migration execution %s resumes where it stopped", claimed.id)
            self._start(claimed, source, target)

    async def watch(self) -> None:
        """Settle once as the service starts, then, on shared storage, every HEARTBEAT_S
        for the jobs of a replica killed. A task, not a start hook: startup (and the
        first polls' readers) never waits on this query."""
        while True:
            try:
                await self.settle()
            except Exception:  # storage down: the next round tries again
                logger.exception("settling migration jobs failed")
            if not self.shared:
                return
            await asyncio.sleep(HEARTBEAT_S)

    async def stop(self) -> None:
        await self._runner.stop()

    # --- running ---

    def _execution(self) -> Execution:
        return Execution(self.connections, self.live_state, pressure_wait_s=self.pressure_wait_s)

    def _start(self, job: Job, source: Connection, target: Connection) -> None:
        p = job.params
        if job.kind == "analysis":
            analysis = Analysis(self.connections, self.memory_samples, self._now_ms)

            async def analyse(context: JobContext) -> dict[str, object]:
                report = await analysis.run(
                    source,
                    target,
                    int(str(p.get("sampleSize", 10_000))),
                    progress=context.report,
                    cancelled=context.cancelled,
                    rates=await self._measured_rates(),
                )
                return report.model_dump(mode="json")

            self._runner.start(job, analyse)
        elif job.kind == "execution":
            execution = self._execution()

            async def execute(context: JobContext) -> dict[str, object]:
                return await execution.run(
                    context,
                    source,
                    target,
                    overwrite=bool(p.get("overwrite")),
                    catch_up=bool(p.get("catchUp", True)),
                    method=str(p.get("method", "auto")),
                )

            self._runner.start(job, execute, resumable=True)
        else:
            validation = Validation(self.connections, self.memory_samples, self._now_ms)

            async def validate(context: JobContext) -> dict[str, object]:
                return await validation.run(
                    context,
                    source,
                    target,
                    sample_size=int(str(p.get("sampleSize", 1_000))),
                    ttl_tolerance_ms=int(str(p.get("ttlToleranceMs", 1_000))),
                    estimate_bytes=_int(p.get("estimateBytes")),
                    expired_during_copy=_int(p.get("expiredDuringCopy")),
                )

            self._runner.start(job, validate)

    async def _measured_rates(self) -> dict[str, MeasuredRate]:
        """The copy rate of the newest completed execution of each method."""
        rates: dict[str, MeasuredRate] = {}
        for job in await self.store.newest("execution", limit=20):
            report = job.report or {}
            method, keys_s = report.get("method"), report.get("keysPerSecond")
            if job.status != "completed" or not isinstance(method, str) or method in rates:
                continue
            if isinstance(keys_s, int | float) and keys_s > 0:
                bytes_s = report.get("bytesPerSecond")
                rates[method] = MeasuredRate(
                    float(keys_s),
                    float(bytes_s) if isinstance(bytes_s, int | float) else None,
                    f"the measured rate of execution {job.id} ({report.get('copiedKeys')} keys "
                    f"by {method}, catch-up included)",
                )
        return rates

    async def _new(
        self, kind: JobKind, source: Connection, target: Connection, params: dict[str, object]
    ) -> Job:
        now = self._now_ms()
        job = Job(
            id=str(uuid.uuid4()),
            kind=kind,
            source_id=source.id,
            target_id=target.id,
            status="pending",
            created_at=now,
            updated_at=now,
            completed_at=None,
            progress=0.0,
            error=None,
            params=params,
            state={},
            report=None,
        )
        await self.store.insert(job)
        return job


def summarise(job: Job) -> str:
    """One line of what a finished job found or did."""
    report = job.report or {}
    if job.status != "completed":
        return job.error or job.status
    if job.kind == "analysis":
        findings = report.get("findings")
        listed = findings if isinstance(findings, list) else []
        blocking = sum(1 for f in listed if isinstance(f, dict) and f.get("severity") == "blocking")
        warning = sum(1 for f in listed if isinstance(f, dict) and f.get("severity") == "warning")
        return f"verdict {report.get('verdict')}: {blocking} blocking, {warning} warning findings"
    if job.kind == "execution":
        return (
            f"{_int(report.get('copiedKeys')) or 0:,} keys copied by {report.get('method')}, "
            f"{_int(report.get('expiredKeys')) or 0:,} expired during the copy, "
            f"{_int(report.get('recopiedKeys')) or 0:,} copied again by the catch-up"
        )
    return f"{_int(report.get('differenceCount')) or 0:,} differences"


def _int(value: object) -> int | None:
    return int(value) if isinstance(value, int | float) else None
