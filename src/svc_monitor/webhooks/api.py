"""/api/webhooks: which event types this install's tier may subscribe to.

The rest of the webhook API (create, deliveries, retries) arrives with the webhooks
domain; this route needs only the licence, so it is here first.
"""

from fastapi import APIRouter

from svc_monitor.licensing.schemas import AllowedEventsRead
from svc_monitor.licensing.tiers import allowed_events, locked_events
from svc_monitor.services import ServicesDep

router = APIRouter(prefix="/webhooks", tags=["webhooks"])


@router.get("/allowed-events", response_model=AllowedEventsRead)
async def get_allowed_events(services: ServicesDep) -> AllowedEventsRead:
    """The event types this tier may subscribe to, and those a higher tier unlocks."""
    tier = services.license.tier
    return AllowedEventsRead(
        tier=tier, allowedEvents=allowed_events(tier), lockedEvents=locked_events(tier)
    )
