"""Migration jobs: started, run in the background, stored as they go, cancelled, read.

A job runs as a task of the process that took the request. Its row is written when it
starts, at every whole percent of progress (and at least every HEARTBEAT_S while it
runs), and when it ends. A job left `running` by a process that was killed is found at
the next start (`settle`): an analysis is then marked failed, with the reason, and can be
started again (docs/features/migration.md#jobs).

The picker's rules (pick): both connections exist, they differ, and neither is a push
connection, which svc-monitor only receives metrics from: it cannot read or write its
keys, so it is refused with a message of its own naming the field.
"""

import asyncio
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace

from svc_monitor.connections.models import Connection
from svc_monitor.connections.service import ConnectionNotFound, ConnectionService
from svc_monitor.engine.errors import EngineError
from svc_monitor.errors import Conflict, NotFound, Unprocessable
from svc_monitor.migration.analysis import Analysis, MemorySamples, Progress
from svc_monitor.migration.models import Job, JobKind, JobStatus
from svc_monitor.migration.schemas import AnalysisCreate
from svc_monitor.migration.store import MigrationStore

logger = logging.getLogger(__name__)

HEARTBEAT_S = 10.0
# A running job's row not written for this long has no process running it any more.
STALE_MS = int(6 * HEARTBEAT_S * 1000)
# A job's work: handed the progress callback, it answers the report's JSON.
Work = Callable[[Progress], Awaitable[dict[str, object]]]
STOPPED = "svc-monitor stopped while the job ran; start it again"


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


@dataclass(eq=False)
class MigrationService:
    store: MigrationStore
    connections: ConnectionService
    memory_samples: MemorySamples
    clock: Callable[[], float] = time.time
    _tasks: dict[str, asyncio.Task[None]] = field(default_factory=dict, init=False)
    _cancel: dict[str, asyncio.Event] = field(default_factory=dict, init=False)

    def _now_ms(self) -> int:
        return int(self.clock() * 1000)

    # --- the picker ---

    async def pick(self, source_id: str, target_id: str) -> tuple[Connection, Connection]:
        """The two ends of a job (module docstring); 422 naming the field otherwise."""
        if source_id == target_id:
            raise Unprocessable(
                "Source and target must be different connections", field="targetConnectionId"
            )
        ends = []
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
            ends.append(connection)
        return ends[0], ends[1]

    # --- jobs ---

    async def start_analysis(self, body: AnalysisCreate) -> Job:
        source, target = await self.pick(body.sourceConnectionId, body.targetConnectionId)
        job = await self._new("analysis", source, target, {"sampleSize": body.sampleSize})
        analysis = Analysis(self.connections, self.memory_samples, self._now_ms)
        cancelled = self._cancel[job.id]

        async def run(progress: Progress) -> dict[str, object]:
            report = await analysis.run(
                source, target, body.sampleSize, progress=progress, cancelled=cancelled
            )
            return report.model_dump(mode="json")

        self._spawn(job, run)
        return job

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
        event = self._cancel.get(job_id)
        if event is not None:
            event.set()
        task = self._tasks.get(job_id)
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        current = await self.get(kind, job_id)
        if not current.finished:  # not running here: left by a stopped process
            current = await self._finish(current, "cancelled", error=None)
        return current

    async def settle(self) -> None:
        """At start: jobs a stopped process left unfinished are marked failed (module
        docstring). A job another replica runs has a row younger than STALE_MS: it is
        left alone."""
        stale_before = self._now_ms() - STALE_MS
        for job in await self.store.unfinished():
            if job.id not in self._tasks and job.updated_at < stale_before:
                await self._finish(job, "failed", error=STOPPED)

    async def stop(self) -> None:
        for task in list(self._tasks.values()):
            task.cancel()
        await asyncio.gather(*self._tasks.values(), return_exceptions=True)

    # --- running ---

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
        self._cancel[job.id] = asyncio.Event()
        return job

    def _spawn(self, job: Job, work: Work) -> None:
        task = asyncio.create_task(self._run(job, work), name=f"migration {job.kind} {job.id}")
        self._tasks[job.id] = task
        task.add_done_callback(lambda _: self._forget(job.id))

    def _forget(self, job_id: str) -> None:
        self._tasks.pop(job_id, None)
        self._cancel.pop(job_id, None)

    async def _run(self, job: Job, work: Work) -> None:
        current = replace(job, status="running", updated_at=self._now_ms())
        await self.store.save(current)
        saved_at = time.monotonic()

        async def progress(percent: float) -> None:
            nonlocal current, saved_at
            whole = int(percent) > int(current.progress)
            current = replace(current, progress=round(min(percent, 100.0), 1))
            if whole or time.monotonic() - saved_at > HEARTBEAT_S:
                current = replace(current, updated_at=self._now_ms())
                await self.store.save(current)
                saved_at = time.monotonic()

        async def heartbeat() -> None:
            # A long step reports no progress; the row still shows the job alive (settle).
            while True:
                await asyncio.sleep(HEARTBEAT_S)
                if time.monotonic() - saved_at >= HEARTBEAT_S:
                    await progress(current.progress)

        beat = asyncio.create_task(heartbeat(), name=f"migration heartbeat {job.id}")
        try:
            report = await work(progress)
        except asyncio.CancelledError:
            cancelled = self._cancel.get(job.id)
            by_user = cancelled is not None and cancelled.is_set()
            await self._finish(
                current, "cancelled" if by_user else "failed", error=None if by_user else STOPPED
            )
            raise
        except EngineError as exc:
            await self._finish(current, "failed", error=exc.message)
        except Exception as exc:  # a job's failure is its report, never a crash
            logger.exception("migration %s %s failed", job.kind, job.id)
            await self._finish(current, "failed", error=f"{type(exc).__name__}: {exc}")
        else:
            cancelled = self._cancel.get(job.id)
            if cancelled is not None and cancelled.is_set():
                await self._finish(current, "cancelled", error=None)
            else:
                await self._finish(
                    replace(current, progress=100.0, report=report),
                    "completed",
                    error=None,
                )
        finally:
            beat.cancel()

    async def _finish(self, job: Job, status: JobStatus, *, error: str | None) -> Job:
        now = self._now_ms()
        done = replace(
            job,
            status=status,
            error=error,
            updated_at=now,
            completed_at=now,
        )
        await self.store.save(done)
        return done
