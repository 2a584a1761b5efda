"""The five runtime settings the spec lets operators change without a restart."""

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

Interval = Annotated[int, Field(ge=1, le=2_147_483_647, description="milliseconds")]


class RuntimeSettingsValues(BaseModel):
    """Every runtime setting with its value."""

    model_config = ConfigDict(extra="forbid")

    auditPollIntervalMs: Interval
    clientAnalyticsPollIntervalMs: Interval
    anomalyPollIntervalMs: Interval
    anomalyCacheTtlMs: Interval
    anomalyPrometheusIntervalMs: Interval


class RuntimeSettingsUpdate(BaseModel):
    """Any subset of the settings; an unknown name is refused (422) rather than ignored."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [{"auditPollIntervalMs": 60_000, "clientAnalyticsPollIntervalMs": 30_000}]
        },
    )

    auditPollIntervalMs: Interval | None = None
    clientAnalyticsPollIntervalMs: Interval | None = None
    anomalyPollIntervalMs: Interval | None = None
    anomalyCacheTtlMs: Interval | None = None
    anomalyPrometheusIntervalMs: Interval | None = None


class RuntimeSettingsRead(BaseModel):
    """The settings in force, and where they come from."""

    settings: RuntimeSettingsValues
    source: Literal["environment", "database"] = Field(
        description="environment until the first PUT, database after"
    )
    persisted: bool = Field(
        description="false with STORAGE_TYPE=memory: changes last until the service restarts"
    )
    updatedAt: int | None = Field(description="epoch ms of the last change, if any")
