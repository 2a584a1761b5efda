"""The end of a migration job (migration/): an analysis, an execution or a validation
completed, or failed.

Both are named by us (docs/features/migration.md#events); each fires once per job, as
the job's row is written for the last time. The connection is the migration's source.
"""

from dataclasses import dataclass
from typing import Any

from svc_monitor.event_types.base import Data, EventType, clip, event_type, fields_of
from svc_monitor.events import InstanceEvent


@dataclass(frozen=True, slots=True, kw_only=True)
class MigrationJobEnded(InstanceEvent):
    """A migration job ended (completed or failed)."""

    job_id: str
    kind: str  # analysis, execution or validation
    target_connection_id: str
    summary: str  # one line: the verdict, the keys copied, the differences found
    error: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class MigrationJobCompleted(MigrationJobEnded):
    """A migration job completed."""


@dataclass(frozen=True, slots=True, kw_only=True)
class MigrationJobFailed(MigrationJobEnded):
    """A migration job failed."""


def _completed(e: MigrationJobCompleted) -> Data:
    """a migration analysis, execution or validation completed

    Named by us; fires once when a job completes: `{jobId, kind, targetConnectionId,
    summary, message, timestamp}`; `summary` is the analysis's verdict and findings, the
    keys an execution copied, or the differences a validation found."""
    return fields_of(
        e,
        "job_id",
        "kind",
        "target_connection_id",
        "summary",
        message=f"migration {e.kind} completed: {clip(e.summary)}",
        timestamp=e.at_ms,
    )


MIGRATION_COMPLETED = event_type(
    _completed,
    name="migration.completed",
    order=185,
    tier="community",
    severity="info",
    example=MigrationJobCompleted(
        connection_id="c1",
        job_id="5f0c3c9e-2f7b-4d43-9a55-3c1c8b6d9e01",
        kind="execution",
        target_connection_id="c2",
        summary="50,400 keys copied by dump_restore, 0 expired during the copy",
    ),
)


def _failed(e: MigrationJobFailed) -> Data:
    """a migration analysis, execution or validation failed

    Named by us; fires once when a job fails: `{jobId, kind, targetConnectionId, error,
    message, timestamp}`. An execution stopped with svc-monitor does not fail: it resumes
    at the next start."""
    return fields_of(
        e,
        "job_id",
        "kind",
        "target_connection_id",
        "error",
        message=f"migration {e.kind} failed: {clip(e.error or 'unknown error')}",
        timestamp=e.at_ms,
    )


MIGRATION_FAILED = event_type(
    _failed,
    name="migration.failed",
    order=186,
    tier="community",
    severity="error",
    example=MigrationJobFailed(
        connection_id="c1",
        job_id="5f0c3c9e-2f7b-4d43-9a55-3c1c8b6d9e01",
        kind="execution",
        target_connection_id="c2",
        summary="",
        error="RESTORE of a key refused by the target: OOM command not allowed",
    ),
)


EVENT_TYPES: tuple[EventType[Any], ...] = (MIGRATION_COMPLETED, MIGRATION_FAILED)
