"""The trigger levels of the threshold notifications: a webhook's `thresholds`, with the
defaults and ranges of docs/features/webhooks.md#fields-and-ranges.

Shared by every consumer of the bus that judges readings: a webhook carries its own
(validated from its JSON), the OTLP event export uses the defaults. Each threshold
event type names its field (event_types/readings.py).
"""

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field


class Thresholds(BaseModel):
    """Per-webhook trigger levels; each applies only to the event it names."""

    model_config = ConfigDict(extra="forbid")

    memoryCriticalPercent: Annotated[int, Field(ge=1, le=100)] = 90
    connectionCriticalPercent: Annotated[int, Field(ge=1, le=100)] = 90
    complianceMemoryPercent: Annotated[int, Field(ge=1, le=100)] = 80
    slowlogCount: Annotated[int, Field(ge=1, le=1_000_000)] = 100
    replicationLagSeconds: Annotated[int, Field(ge=1, le=86_400)] = 10
    latencySpikeMs: Annotated[int, Field(ge=0, le=600_000)] = Field(
        0, description="0 = automatic baseline detection"
    )
    connectionSpikeCount: Annotated[int, Field(ge=0, le=1_000_000)] = Field(
        0, description="0 = automatic baseline detection"
    )

    def level(self, field: str, *, automatic: float | None = None) -> float | None:
        """The level of the field named: its value, or where that is 0 the automatic
        baseline's level (None while the baseline is still learning)."""
        configured = float(getattr(self, field))
        return configured if configured > 0 else automatic
