"""Request and response bodies of /api/webhooks: the field names and ranges of
docs/features/webhooks.md#fields-and-ranges.

The four settings objects (retryPolicy, deliveryConfig, alertConfig, thresholds) are
also what the service and the store work with: they are small validated values, stored
as JSON with these same names.
"""

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, model_validator

from svc_monitor.detection.alerts.schemas import Thresholds
from svc_monitor.kit.plain_text import Printable
from svc_monitor.licensing.models import WEBHOOK_EVENT_TIERS

# Ranges chosen generous enough for any real receiver, small enough that a typo (a delay
# of days) is refused rather than stored (docs/features/webhooks.md#fields-and-ranges).
MAX_NAME = 100
MAX_EVENTS = len(WEBHOOK_EVENT_TIERS)  # each event type once
# How long past its timeout an attempt's row stays hidden from other claimers: room to
# record the result (results are written within ~10 ms; this allows a slow storage).
# An attempt a crash cuts off is tried again this long after its timeout.
LEASE_MARGIN_MS = 5000


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RetryPolicy(_Strict):
    """When a failed delivery is tried again: attempt 1 is immediate, then one retry per
    delay `initialDelayMs x backoffMultiplier^(n-1)`, capped at `maxDelayMs`."""

    maxRetries: Annotated[int, Field(ge=0, le=10)] = 3
    initialDelayMs: Annotated[int, Field(ge=100, le=600_000)] = 1000
    backoffMultiplier: Annotated[float, Field(ge=1, le=10)] = 2
    maxDelayMs: Annotated[int, Field(ge=100, le=3_600_000)] = 60_000

    @model_validator(mode="after")
    def _cap_not_below_start(self) -> "RetryPolicy":
        if self.maxDelayMs < self.initialDelayMs:
            raise ValueError("retryPolicy.maxDelayMs must be at least retryPolicy.initialDelayMs")
        return self

    def delay_before_retry_ms(self, retry: int) -> int:
        """The wait before retry number `retry` (1-based)."""
        delay = self.initialDelayMs * self.backoffMultiplier ** (retry - 1)
        return int(min(delay, self.maxDelayMs))


class DeliveryConfig(_Strict):
    timeoutMs: Annotated[int, Field(ge=1000, le=120_000)] = 30_000
    maxResponseBodyBytes: Annotated[int, Field(ge=1000, le=100_000)] = 10_000

    @property
    def lease_ms(self) -> int:
        """How long a row being attempted is hidden from the retry queue (worker.py)."""
        return self.timeoutMs + LEASE_MARGIN_MS


class AlertConfig(_Strict):
    hysteresisFactor: Annotated[float, Field(ge=0.5, le=0.99)] = 0.9


Name = Annotated[Printable, Field(min_length=1, max_length=MAX_NAME)]
Url = Annotated[str, Field(min_length=1, max_length=2048)]
Secret = Annotated[str, Field(min_length=1, max_length=512)]
Events = Annotated[list[str], Field(min_length=1, max_length=MAX_EVENTS)]


class WebhookCreate(_Strict):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "name": "on-call",
                    "url": "https://hooks.example.com/svc-monitor",
                    "events": ["instance.down", "instance.up", "memory.critical"],
                    "secret": "a shared signing secret",
                }
            ]
        },
    )

    name: Name
    url: Url
    events: Events
    secret: Secret | None = None
    enabled: bool = True
    headers: dict[str, str] = Field(default_factory=dict)
    retryPolicy: RetryPolicy = Field(default_factory=RetryPolicy)
    deliveryConfig: DeliveryConfig = Field(default_factory=DeliveryConfig)
    alertConfig: AlertConfig = Field(default_factory=AlertConfig)
    thresholds: Thresholds = Field(default_factory=Thresholds)


class WebhookUpdate(_Strict):
    """Only the fields present change. `secret: null` removes the secret; sending back the
    masked value a GET showed keeps the stored one (so do masked header values)."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={"examples": [{"enabled": False}, {"events": ["instance.down"]}]},
    )

    name: Name | None = None
    url: Url | None = None
    events: Events | None = None
    secret: Secret | None = None
    enabled: bool | None = None
    headers: dict[str, str] | None = None
    retryPolicy: RetryPolicy | None = None
    deliveryConfig: DeliveryConfig | None = None
    alertConfig: AlertConfig | None = None
    thresholds: Thresholds | None = None


class WebhookRead(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "id": "wh_5c1f0b",
                    "name": "on-call",
                    "url": "https://hooks.example.com/svc-monitor",
                    "secret": "a sh***",
                    "enabled": True,
                    "events": ["instance.down", "instance.up"],
                    "headers": {},
                    "retryPolicy": RetryPolicy().model_dump(),
                    "deliveryConfig": DeliveryConfig().model_dump(),
                    "alertConfig": AlertConfig().model_dump(),
                    "thresholds": Thresholds().model_dump(),
                    "connectionId": None,
                    "createdAt": 1795942051139,
                    "updatedAt": 1795942051139,
                }
            ]
        }
    )

    id: str
    name: str
    url: str
    secret: str | None = Field(description="masked: a leading part, then ***")
    enabled: bool
    events: list[str]
    headers: dict[str, str] = Field(description="values of credential-like headers masked")
    retryPolicy: RetryPolicy
    deliveryConfig: DeliveryConfig
    alertConfig: AlertConfig
    thresholds: Thresholds
    connectionId: str | None = Field(description="null for a global webhook")
    createdAt: int
    updatedAt: int


class DeliveryRead(BaseModel):
    id: str
    webhookId: str
    eventType: str
    status: str = Field(
        description="pending, success, retrying, dead_letter, failed or superseded (a newer "
        "delivery of the same state replaced it: never sent again)"
    )
    statusCode: int | None
    responseBody: str | None
    attempts: int
    durationMs: int | None
    createdAt: int
    completedAt: int | None
    nextRetryAt: int | None = Field(description="when the next attempt is due (epoch ms)")
    error: str | None = Field(description="why the last attempt failed, when nothing answered")
    connectionId: str | None
    payload: str = Field(description="the JSON body sent (the same on every attempt)")
    supersededBy: str | None = Field(
        default=None, description="the id of the newer delivery that superseded this one"
    )


class TestResult(BaseModel):
    success: bool
    statusCode: int | None
    responseBody: str | None
    durationMs: int
    error: str | None = None


class RetryQueued(BaseModel):
    message: str = "Retry queued"


class RetryQueueStats(BaseModel):
    pendingRetries: int
    nextRetryTime: int | None = Field(description="epoch ms of the earliest due retry")
