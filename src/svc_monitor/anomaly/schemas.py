"""Responses of the anomaly routes."""

from typing import Any

from pydantic import BaseModel

from svc_monitor.detection.anomaly.models import BufferState
from svc_monitor.kit.records import from_attributes


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
        return from_attributes(
            cls,
            row,
            anomalyType=row.kind,
            stdDev=row.stddev,
            timestamp=row.captured_at,
            resolved=row.resolved_at is not None,
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
        return from_attributes(
            cls,
            row,
            metrics=list(row.metrics),
            timestamp=row.captured_at,
            resolved=row.resolved_at is not None,
        )


class BufferRead(BaseModel):
    metric: str
    samples: int
    ready: bool
    mean: float | None
    stdDev: float | None

    @classmethod
    def of(cls, state: BufferState) -> "BufferRead":
        return from_attributes(cls, state, stdDev=state.stddev)


class BuffersRead(BaseModel):
    connectionId: str
    readyAt: int
    windowSize: int
    buffers: list[BufferRead]
