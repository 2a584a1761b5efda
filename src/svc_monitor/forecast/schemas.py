"""Bodies of the metric forecasting routes."""

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

MetricKind = Literal["usedMemory", "opsPerSec", "cpuTotal", "memFragmentation"]
WindowMs = Annotated[int, Field(ge=60_000, le=86_400_000, description="milliseconds, 1 min-24 h")]


class ForecastPoint(BaseModel):
    t: int = Field(description="epoch ms")
    value: float


class ForecastRead(BaseModel):
    """One metric's trend over its rolling window and, with a ceiling, the time to reach it."""

    connectionId: str
    metricKind: MetricKind
    mode: Literal["trend", "forecast"] = Field(
        description="forecast when the metric has a ceiling (set, or the kind's default)"
    )
    currentValue: float | None = Field(description="the newest sample's value")
    growthRate: float = Field(description="slope of the fitted line, units per hour")
    growthRateStdErr: float = Field(description="standard error of growthRate")
    growthPercent: float = Field(description="change of the fitted line across the window")
    trendDirection: Literal["rising", "falling", "stable"] = Field(
        description="stable within +-5 % over the window"
    )
    dataPointCount: int = Field(description="time buckets with a value in the window")
    windowMs: int
    ceiling: float | None
    timeToLimitMs: int | None = Field(
        description="0 when the ceiling is already reached; null without a ceiling or a rise"
    )
    timeToLimitLowMs: int | None = Field(
        description="earliest time to the limit: the slope two standard errors steeper"
    )
    timeToLimitHighMs: int | None = Field(
        description="latest time to the limit: the slope two standard errors shallower; "
        "null when that slope does not rise"
    )
    timeToLimitHuman: str
    enabled: bool
    insufficientData: bool
    insufficientDataMessage: str | None = None
    points: list[ForecastPoint] = Field(description="the window's samples, bucketed")
    projection: list[ForecastPoint] = Field(
        description="the fitted line from the window's start to the crossing (or window's "
        "length ahead); empty without a fit"
    )


class ForecastSettingsRead(BaseModel):
    """A connection's settings for one metric (the defaults until an admin saves some)."""

    connectionId: str
    metricKind: MetricKind
    enabled: bool
    ceiling: float | None = Field(description="null: the kind's default ceiling")
    defaultCeiling: float | None = Field(
        description="what null means now: maxmemory for usedMemory, 100 for cpuTotal, "
        "1.5 for memFragmentation, none for opsPerSec"
    )
    rollingWindowMs: int
    alertThresholdMs: int
    updatedAt: int | None = Field(description="epoch ms of the last save; null: defaults")


class ForecastSettingsUpdate(BaseModel):
    """Any subset of the settings; `ceiling: null` goes back to the kind's default."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={"examples": [{"enabled": True, "alertThresholdMs": 7_200_000}]},
    )

    enabled: bool | None = None
    ceiling: Annotated[float, Field(ge=0.01, le=1e18)] | None = None
    rollingWindowMs: WindowMs | None = None
    alertThresholdMs: WindowMs | None = None
