"""/api/webhooks: webhooks, their test call and delivery history, and the retry queue."""

from typing import Annotated

from fastapi import APIRouter, Depends, Header, Query, Response, status

from svc_monitor.api.dependencies import ServicesDep
from svc_monitor.api.error_responses import error_responses
from svc_monitor.api.params import MAX_COUNT
from svc_monitor.licensing.models import allowed_events, locked_events
from svc_monitor.licensing.schemas import AllowedEventsRead
from svc_monitor.webhooks.schemas import (
    DeliveryRead,
    RetryQueued,
    RetryQueueStats,
    TestResult,
    WebhookCreate,
    WebhookRead,
    WebhookUpdate,
)
from svc_monitor.webhooks.service import WebhookService

router = APIRouter(prefix="/webhooks", tags=["webhooks"])


def get_webhook_service(services: ServicesDep) -> WebhookService:
    return services.webhooks


WebhooksDep = Annotated[WebhookService, Depends(get_webhook_service)]
ConnectionHeader = Annotated[
    str | None,
    Header(
        alias="X-Connection-Id",
        max_length=64,
        description="Scopes the webhook to this connection; absent means global",
    ),
]


@router.get("/allowed-events", response_model=AllowedEventsRead)
async def get_allowed_events(services: ServicesDep) -> AllowedEventsRead:
    """The event types this tier may subscribe to, and those a higher tier unlocks."""
    tier = services.license.tier
    return AllowedEventsRead(
        tier=tier, allowedEvents=allowed_events(tier), lockedEvents=locked_events(tier)
    )


@router.get("/stats/retry-queue", response_model=RetryQueueStats)
async def get_retry_queue(webhooks: WebhooksDep) -> RetryQueueStats:
    """Deliveries waiting for a retry, and when the earliest is due."""
    return await webhooks.retry_queue()


@router.post(
    "/deliveries/{deliveryId}/retry",
    response_model=RetryQueued,
    status_code=status.HTTP_202_ACCEPTED,
    responses=error_responses(404, 409),
)
async def retry_delivery(deliveryId: str, webhooks: WebhooksDep) -> RetryQueued:
    """Queue a dead_letter or failed delivery for one more attempt (409 for any other)."""
    await webhooks.retry(deliveryId)
    return RetryQueued()


@router.get("", response_model=list[WebhookRead])
async def list_webhooks(
    webhooks: WebhooksDep, x_connection_id: ConnectionHeader = None
) -> list[WebhookRead]:
    """Every webhook, newest first, secrets masked. With X-Connection-Id: that connection's
    webhooks and the global ones."""
    return await webhooks.list_webhooks(x_connection_id)


@router.post(
    "",
    response_model=WebhookRead,
    status_code=status.HTTP_201_CREATED,
    responses=error_responses(403, 404, 422),
)
async def create_webhook(
    body: WebhookCreate, webhooks: WebhooksDep, x_connection_id: ConnectionHeader = None
) -> WebhookRead:
    """Create a webhook: global, or for the connection X-Connection-Id names. 403 names the
    events the licence tier does not include; 422 names the field at fault (URL rules,
    SSRF, restricted headers, ranges)."""
    return await webhooks.create(body, connection_id=x_connection_id)


@router.get("/{id}", response_model=WebhookRead, responses=error_responses(404))
async def get_webhook(id: str, webhooks: WebhooksDep) -> WebhookRead:
    """One webhook, secret masked."""
    return await webhooks.get(id)


@router.put("/{id}", response_model=WebhookRead, responses=error_responses(403, 404, 422))
async def update_webhook(
    id: str,
    body: WebhookUpdate,
    webhooks: WebhooksDep,
) -> WebhookRead:
    """Change the fields given. `secret: null` removes the secret; sending back a masked
    value (secret or header) keeps what is stored."""
    return await webhooks.update(id, body)


@router.delete("/{id}", status_code=status.HTTP_204_NO_CONTENT, responses=error_responses(404))
async def delete_webhook(id: str, webhooks: WebhooksDep) -> Response:
    """Delete a webhook, its delivery history and its alert states (on every replica)."""
    await webhooks.delete(id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.post("/{id}/test", response_model=TestResult, responses=error_responses(404))
async def test_webhook(id: str, webhooks: WebhooksDep) -> TestResult:
    """Send one signed test payload (the first subscribed event type, `data.test: true`,
    header `X-Webhook-Test: true`) and report the answer. Not stored, not retried."""
    return await webhooks.test(id)


@router.get(
    "/{id}/deliveries", response_model=list[DeliveryRead], responses=error_responses(404, 422)
)
async def list_deliveries(
    id: str,
    webhooks: WebhooksDep,
    limit: Annotated[int, Query(ge=1, le=1000)] = 50,
    offset: Annotated[int, Query(ge=0, le=MAX_COUNT)] = 0,
) -> list[DeliveryRead]:
    """This webhook's deliveries, newest first."""
    return await webhooks.deliveries(id, limit=limit, offset=offset)
