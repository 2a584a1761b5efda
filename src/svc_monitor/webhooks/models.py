"""A webhook and a delivery as the service holds them (secrets in clear, in memory only)."""

from dataclasses import dataclass
from enum import StrEnum

from svc_monitor.detection.alerts.schemas import Thresholds
from svc_monitor.webhooks.schemas import AlertConfig, DeliveryConfig, RetryPolicy


class DeliveryStatus(StrEnum):
    PENDING = "pending"
    SUCCESS = "success"
    RETRYING = "retrying"
    DEAD_LETTER = "dead_letter"
    FAILED = "failed"  # permanent: retrying cannot help (see delivery.py)
    # A newer delivery of the same state replaced it before it got through (states.py).
    SUPERSEDED = "superseded"


# Rows the retry worker may pick up when due.
QUEUED = (DeliveryStatus.PENDING, DeliveryStatus.RETRYING)


@dataclass(frozen=True, slots=True)
class Webhook:
    id: str
    name: str
    url: str
    secret: str | None
    enabled: bool
    events: tuple[str, ...]
    headers: dict[str, str]
    retry_policy: RetryPolicy
    delivery_config: DeliveryConfig
    alert_config: AlertConfig
    thresholds: Thresholds
    connection_id: str | None
    created_at: int
    updated_at: int

    def covers(self, connection_id: str | None) -> bool:
        return self.connection_id is None or self.connection_id == connection_id


@dataclass(frozen=True, slots=True)
class Delivery:
    id: str
    webhook_id: str
    event_type: str
    payload: str
    status: DeliveryStatus
    attempts: int
    max_attempts: int
    created_at: int
    connection_id: str | None = None
    status_code: int | None = None
    response_body: str | None = None
    duration_ms: int | None = None
    completed_at: int | None = None
    next_retry_at: int | None = None
    error: str | None = None
    # When its event happened (the envelope's timestamp): the order of a state's
    # deliveries (states.py). None: when it was created.
    event_at: int | None = None
    superseded_by: str | None = None  # the newer delivery of its state, when superseded

    @property
    def happened_at(self) -> int:
        return self.event_at if self.event_at is not None else self.created_at


@dataclass(frozen=True, slots=True)
class AttemptResult:
    """What one POST to a receiver came to."""

    status_code: int | None = None
    response_body: str | None = None
    duration_ms: int = 0
    error: str | None = None  # set when nothing usable answered
    permanent: bool = False  # retrying cannot help (a refused target)

    @property
    def succeeded(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300


@dataclass(slots=True)
class Outcome:
    """The row changes one attempt makes."""

    delivery_id: str
    status: DeliveryStatus
    attempts: int
    result: AttemptResult
    finished_at: int
    next_retry_at: int | None = None
    superseded_by: str | None = None
