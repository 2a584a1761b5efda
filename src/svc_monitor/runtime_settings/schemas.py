"""The runtime settings operators change without a restart: seven intervals, the search
SLA (a default and each index's own), and the history retention window LOCAL_RETENTION_DAYS
seeds (`/settings` in
docs/features/http-api.md#health-readiness-and-liveness)."""

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

# Strict integers: JSON `true`, `"7"` and `7.0` are refused (422 naming the field) instead
# of being read as 1 and 7; `retentionDays: true` would otherwise keep one day of history.
# The Settings form converts what was typed before it validates (web/routes/settings.py).
Interval = Annotated[int, Field(ge=1, le=2_147_483_647, strict=True, description="milliseconds")]
# 0 is allowed here, and means every INFO pass reads the full INFO.
FullInfoInterval = Annotated[
    int,
    Field(
        ge=0,
        le=2_147_483_647,
        strict=True,
        description="milliseconds between full INFO reads; 0 reads the full INFO on every pass",
    ),
]
# A search SLA's p99 in microseconds; 0 in searchSlaByIndex turns an index's SLA off.
SlaUs = Annotated[int, Field(ge=1, le=2_147_483_647, strict=True, description="microseconds")]
IndexSlas = Annotated[
    dict[
        Annotated[str, Field(min_length=1, max_length=256)],
        Annotated[int, Field(ge=0, le=2_147_483_647, strict=True)],
    ],
    Field(
        max_length=1024,
        description="an index's own p99 SLA in microseconds, by index name; 0 turns it off",
    ),
]
# A century: past it a window keeps everything anyway, and a typo of extra digits is caught.
MAX_RETENTION_DAYS = 36_500
RetentionDays = Annotated[
    int,
    Field(
        ge=1,
        le=MAX_RETENTION_DAYS,
        strict=True,
        description="days of history kept; null keeps all",
    ),
]


class RuntimeSettingsValues(BaseModel):
    """Every runtime setting with its value."""

    model_config = ConfigDict(extra="forbid")

    auditPollIntervalMs: Interval
    clientAnalyticsPollIntervalMs: Interval
    anomalyPollIntervalMs: Interval
    anomalyCacheTtlMs: Interval
    anomalyPrometheusIntervalMs: Interval
    fullInfoIntervalMs: FullInfoInterval
    vectorIndexPollIntervalMs: Interval
    searchSlaP99Us: SlaUs
    searchSlaByIndex: IndexSlas
    retentionDays: RetentionDays | None


class RuntimeSettingsUpdate(BaseModel):
    """Any subset of the settings; an unknown name is refused (422) rather than ignored.

    `retentionDays: null` means keep history forever; for the intervals null means unchanged.
    """

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
    fullInfoIntervalMs: FullInfoInterval | None = None
    vectorIndexPollIntervalMs: Interval | None = None
    searchSlaP99Us: SlaUs | None = None
    searchSlaByIndex: IndexSlas | None = None
    retentionDays: RetentionDays | None = None

    def changes(self) -> dict[str, Any]:
        """What this update sets: the intervals given, and retentionDays when it was sent."""
        sent = self.model_dump(exclude_unset=True)
        return {k: v for k, v in sent.items() if v is not None or k == "retentionDays"}


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
