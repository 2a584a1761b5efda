"""Third-party sign-in over HTTP: the providers list, the start and the callback.

All three are PUBLIC in roles.RULES: they are how a browser gets a session. The start
and the callback answer 404 unless the broker is available (auth/broker.py says when).
The two small response bodies live here rather than in schemas.py: nothing else uses them.
"""

from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import RedirectResponse
from pydantic import BaseModel

from svc_monitor.api.error_responses import error_responses
from svc_monitor.auth.broker.service import BrokerService, BrokerState
from svc_monitor.auth.dependencies.access import source_ip_of
from svc_monitor.auth.dependencies.origin import public_base
from svc_monitor.auth.dependencies.principal import AuthDep

router = APIRouter(prefix="/auth/broker", tags=["workspace"])


def get_broker(request: Request) -> BrokerService:
    broker: BrokerService = request.app.state.services.broker
    return broker


def broker_available(broker: Annotated[BrokerService, Depends(get_broker)]) -> BrokerService:
    """The service, or 404 before anything else is looked at when sign-in cannot run."""
    broker.require_available()
    return broker


BrokerDep = Annotated[BrokerService, Depends(get_broker)]
AvailableBrokerDep = Annotated[BrokerService, Depends(broker_available)]


class BrokerProviderRead(BaseModel):
    id: str
    name: str
    startUrl: str


class BrokerProvidersRead(BaseModel):
    state: BrokerState
    reason: str | None = None
    providers: list[BrokerProviderRead]


@router.get(
    "/providers",
    response_model=BrokerProvidersRead,
    summary="Third-party sign-in: whether it is available here, and its providers",
)
async def list_broker_providers(
    broker: BrokerDep,
    intent: Annotated[Literal["login", "register", "invite"], Query()] = "login",
    invite: Annotated[str | None, Query(max_length=200)] = None,
) -> BrokerProvidersRead:
    """`state` is `hidden` (turned off: show nothing), `unavailable` (with the `reason`,
    e.g. a missing AUTH_PUBLIC_URL) or `available`; each provider's `startUrl` begins a
    sign-in with the given intent (and invitation token, for `invite`)."""
    view = broker.view(intent=intent, invite=invite)
    return BrokerProvidersRead(
        state=view.state,
        reason=view.reason,
        providers=[
            BrokerProviderRead(id=p.id, name=p.name, startUrl=p.start_url) for p in view.providers
        ],
    )


@router.get(
    "/{provider}/start",
    status_code=303,
    response_class=RedirectResponse,
    responses=error_responses(404, 422),
    summary="Begin a third-party sign-in: sets the state cookie and goes to the broker",
)
async def start_broker_sign_in(
    provider: str,
    request: Request,
    broker: AvailableBrokerDep,
    intent: Annotated[str, Query(max_length=20)] = "login",
    invite: Annotated[str | None, Query(max_length=200)] = None,
) -> RedirectResponse:
    """Redirects (303) to the broker page at AUTH_BROKER_URL for `provider` (github or
    google). 404 when third-party sign-in is off or not configured."""
    started = broker.start(
        provider,
        intent=intent,
        invite=invite,
        public_base=public_base(request, broker.settings),
    )
    response = RedirectResponse(started.location, status_code=303)
    response.headers.append("set-cookie", started.state_cookie)
    response.headers["cache-control"] = "no-store"
    return response


@router.get(
    "/callback",
    status_code=303,
    response_class=RedirectResponse,
    responses=error_responses(404),
    summary="Where the broker sends the browser back: verify, match the email, sign in",
)
async def finish_broker_sign_in(
    request: Request,
    broker: AvailableBrokerDep,
    auth: AuthDep,
    assertion: Annotated[str | None, Query()] = None,
    state: Annotated[str | None, Query()] = None,
) -> RedirectResponse:
    """Redirects (303) to `/` signed in, or to `/login?error=<code>` with nothing signed
    in. 404 when third-party sign-in is off or not configured."""
    finished = await broker.finish(
        assertion=assertion,
        state=state,
        state_cookie=request.cookies.get(broker.cookies.name),
        public_base=public_base(request, broker.settings),
        ip=source_ip_of(request),
    )
    response = RedirectResponse(finished.location, status_code=303)
    response.headers.append("set-cookie", broker.cookies.clear_header())  # one use
    if finished.signed is not None:
        response.headers.append(
            "set-cookie", auth.cookies.set_cookie_header(finished.signed.cookie)
        )
    response.headers["cache-control"] = "no-store"
    # The assertion is in this URL: the page we go to must not pass it on.
    response.headers["referrer-policy"] = "no-referrer"
    return response
