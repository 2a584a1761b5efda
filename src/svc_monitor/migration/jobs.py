"""Running migration jobs: one task each, its row written as it goes, cancelled on ask.

A job's work is handed a `JobContext`: `report(percent, state)` records its progress and,
for a job that can resume, what it needs to go on (`state`); `cancelled` is set when a user
cancels it. The row is written at every whole percent, whenever the state is handed over
with `save=True`, and at least every HEARTBEAT_S by a heartbeat, so a row not written for
STALE_MS has no process running it any more (service.py, `settle`).
"""

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace

from svc_monitor.engine.errors import EngineError
from svc_monitor.errors import AppError
from svc_monitor.migration.models import Job, JobStatus
from svc_monitor.migration.store import MigrationStore

logger = logging.getLogger(__name__)

HEARTBEAT_S = 10.0
# A running job's row not written for this long has no process running it any more.
STALE_MS = int(6 * HEARTBEAT_S * 1000)
STOPPED = "svc-monitor stopped while the job ran; start it again"
# Marks the state of a resumable job stopped with svc-monitor: the next start resumes it.
INTERRUPTED = "interrupted"


@dataclass(eq=False)
class JobContext:
    """What a job's work is handed (module docstring)."""

    job: Job
    store: MigrationStore
    now_ms: Callable[[], int]
    cancelled: asyncio.Event = field(default_factory=asyncio.Event)
    _saved_at: float = field(default_factory=time.monotonic)

    async def report(
        self, percent: float, state: dict[str, object] | None = None, *, save: bool = False
    ) -> None:
        whole = int(percent) > int(self.job.progress)
        self.job = replace(
            self.job,
            progress=round(min(max(percent, 0.0), 100.0), 1),
            state=self.job.state if state is None else state,
        )
        if save or whole or time.monotonic() - self._saved_at > HEARTBEAT_S:
            await self.write()

    async def write(self) -> None:
        self.job = replace(self.job, updated_at=self.now_ms())
        await self.store.save(self.job)
        self._saved_at = time.monotonic()

    async def beat(self) -> None:
        while True:
            await asyncio.sleep(HEARTBEAT_S)
            if time.monotonic() - self._saved_at >= HEARTBEAT_S:
                await self.write()


# A job's work: handed its context, it answers the report's JSON.
Work = Callable[[JobContext], Awaitable[dict[str, object]]]
# Told when a job ends: its final row (the events and the activity log listen).
Ended = Callable[[Job], Awaitable[None]]


class JobRunner:
    def __init__(
        self, store: MigrationStore, now_ms: Callable[[], int], ended: Ended | None = None
    ) -> None:
        self._store = store
        self._now_ms = now_ms
        self._ended = ended
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._contexts: dict[str, JobContext] = {}

    def running(self, job_id: str) -> bool:
        return job_id in self._tasks

    def start(self, job: Job, work: Work, *, resumable: bool = False) -> None:
        """Run `work` as `job`; a `resumable` job stopped with svc-monitor is left to be
        resumed at the next start (INTERRUPTED), any other is marked failed."""
        context = JobContext(job, self._store, self._now_ms)
        self._contexts[job.id] = context
        task = asyncio.create_task(
            self._run(context, work, resumable), name=f"migration {job.kind} {job.id}"
        )
        self._tasks[job.id] = task
        task.add_done_callback(lambda _: self._forget(job.id))

    async def cancel(self, job_id: str) -> None:
        context = self._contexts.get(job_id)
        if context is not None:
            context.cancelled.set()
        task = self._tasks.get(job_id)
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    async def stop(self) -> None:
        for task in list(self._tasks.values()):
            task.cancel()
        await asyncio.gather(*self._tasks.values(), return_exceptions=True)

    async def finish(self, job: Job, status: JobStatus, *, error: str | None) -> Job:
        now = self._now_ms()
        done = replace(job, status=status, error=error, updated_at=now, completed_at=now)
        await self._store.save(done)
        if self._ended is not None:
            try:
                await self._ended(done)
            except Exception:  # telling of a job must not undo its end
                logger.exception("announcing the end of migration job %s failed", job.id)
        return done

    def _forget(self, job_id: str) -> None:
        self._tasks.pop(job_id, None)
        self._contexts.pop(job_id, None)

    async def _run(self, context: JobContext, work: Work, resumable: bool) -> None:
        context.job = replace(context.job, status="running")
        await context.write()
        beat = asyncio.create_task(context.beat(), name=f"migration heartbeat {context.job.id}")
        try:
            report = await work(context)
        except asyncio.CancelledError:
            if context.cancelled.is_set():
                await self.finish(context.job, "cancelled", error=None)
            elif resumable:
                state = {**context.job.state, INTERRUPTED: True}
                context.job = replace(context.job, status="pending", state=state)
                await context.write()
            else:
                await self.finish(context.job, "failed", error=STOPPED)
            raise
        except (EngineError, AppError) as exc:
            await self.finish(context.job, "failed", error=exc.message)
        except Exception as exc:  # a job's failure is its report, never a crash
            logger.exception("migration %s %s failed", context.job.kind, context.job.id)
            await self.finish(context.job, "failed", error=f"{type(exc).__name__}: {exc}")
        else:
            if context.cancelled.is_set():
                await self.finish(context.job, "cancelled", error=None)
            else:
                done = replace(context.job, progress=100.0, report=report)
                await self.finish(done, "completed", error=None)
        finally:
            beat.cancel()
