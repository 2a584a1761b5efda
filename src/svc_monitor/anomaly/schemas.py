"""Responses of the anomaly routes."""

from typing import Any

from pydantic import BaseModel

from svc_monitor.anomaly.models import BufferState


class AnomalyEventRead(BaseModel):
    id: int
    groupId: int | None
    metric: str
    anomalyType: str  # spike | drop
    severity: str  # warning | critical
    value: float
    baseline: float
    stdDev: float
    zScore: float
    threshold: float
    message: str
    timestamp: int  # epoch ms
    resolved: bool
    resolvedAt: int | None

    @classmethod
    def of(cls, row: Any) -> "AnomalyEventRead":
        return cls(
            id=row.id,
            groupId=row.group_id,
            metric=row.metric,
            anomalyType=row.kind,
            severity=row.severity,
            value=row.value,
            baseline=row.baseline,
            stdDev=row.stddev,
            zScore=row.z_score,
            threshold=row.threshold,
            message=row.message,
            timestamp=row.captured_at,
            resolved=row.resolved_at is not None,
            resolvedAt=row.resolved_at,
        )


class CorrelatedGroupRead(BaseModel):
    id: int
    pattern: str
    severity: str
    diagnosis: str
    recommendation: str
    metrics: list[str]
    eventCount: int
    timestamp: int  # epoch ms of the first detection
    resolved: bool
    resolvedAt: int | None

    @classmethod
    def of(cls, row: Any) -> "CorrelatedGroupRead":
        return cls(
            id=row.id,
            pattern=row.pattern,
            severity=row.severity,
            diagnosis=row.diagnosis,
            recommendation=row.recommendation,
            metrics=list(row.metrics),
            eventCount=row.event_count,
            timestamp=row.captured_at,
            resolved=row.resolved_at is not None,
            resolvedAt=row.resolved_at,
        )


class BufferRead(BaseModel):
    metric: str
    samples: int
    ready: bool
    mean: float | None
    stdDev: float | None

    @classmethod
    def of(cls, state: BufferState) -> "BufferRead":
        return cls(
            metric=state.metric,
            samples=state.samples,
            ready=state.ready,
            mean=state.mean,
            stdDev=state.stddev,
        )


class BuffersRead(BaseModel):
    connectionId: str
    readyAt: int
    windowSize: int
    buffers: list[BufferRead]
