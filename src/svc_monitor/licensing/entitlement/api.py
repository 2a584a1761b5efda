"""The entitlement server's routes: /v1 for monitors, /admin for people.

Admin routes take `Authorization: Bearer <token>`: the server's ENTITLEMENT_ADMIN_TOKEN
(staff) or an account token from POST /admin/accounts (acts on its own licences).
"""

from typing import Annotated

from fastapi import APIRouter, Depends, Header, Request, Response

from svc_monitor.api.error_responses import error_responses
from svc_monitor.errors import NotFound
from svc_monitor.licensing.entitlement.schemas import (
    AccountCreate,
    AccountCreated,
    EntitlementGrant,
    EntitlementRequest,
    LicenseCreate,
    LicenseCreated,
    LicenseRead,
    LicenseUpdate,
    TelemetryReport,
    VersionRead,
)
from svc_monitor.licensing.entitlement.service import Caller, EntitlementService

router = APIRouter()


def _service(request: Request) -> EntitlementService:
    service: EntitlementService = request.app.state.entitlements
    return service


ServiceDep = Annotated[EntitlementService, Depends(_service)]


async def _caller(
    service: ServiceDep, authorization: Annotated[str | None, Header()] = None
) -> Caller:
    scheme, _, token = (authorization or "").partition(" ")
    return await service.caller(token.strip() if scheme.lower() == "bearer" else None)


CallerDep = Annotated[Caller, Depends(_caller)]


@router.post(
    "/v1/entitlements",
    response_model=EntitlementGrant,
    responses=error_responses(403, 404, 422),
    tags=["monitors"],
)
async def check_entitlement(body: EntitlementRequest, service: ServiceDep) -> EntitlementGrant:
    """A monitor's licence check: an online token for an active licence key (404 for an
    unknown key, 403 for a suspended, cancelled or expired licence)."""
    return await service.online_grant(body.licenseKey, body.instanceId)


@router.post("/v1/telemetry", status_code=202, tags=["monitors"])
async def receive_telemetry(body: TelemetryReport, service: ServiceDep) -> dict[str, str]:
    """A monitor's anonymous usage report."""
    await service.record_telemetry(body)
    return {"status": "accepted"}


@router.get("/v1/version", response_model=VersionRead, responses=error_responses(404))
async def latest_version(request: Request) -> VersionRead:
    """The latest release, for the monitors' update check (404 when not configured)."""
    settings = request.app.state.settings
    if not settings.ENTITLEMENT_LATEST_VERSION:
        raise NotFound("no latest version is configured")
    return VersionRead(
        latest=settings.ENTITLEMENT_LATEST_VERSION, releaseUrl=settings.ENTITLEMENT_RELEASE_URL
    )


@router.post(
    "/admin/accounts",
    status_code=201,
    response_model=AccountCreated,
    responses=error_responses(401, 403),
    tags=["admin"],
)
async def create_account(
    body: AccountCreate, caller: CallerDep, service: ServiceDep
) -> AccountCreated:
    """A customer account and its admin token (staff only; the token is shown once)."""
    return await service.create_account(caller, body)


@router.post(
    "/admin/licenses",
    status_code=201,
    response_model=LicenseCreated,
    responses=error_responses(401, 403, 404),
    tags=["admin"],
)
async def create_license(
    body: LicenseCreate, caller: CallerDep, service: ServiceDep
) -> LicenseCreated:
    """A licence and its key (staff only; the key is shown once)."""
    return await service.create_license(caller, body)


@router.get(
    "/admin/licenses",
    response_model=list[LicenseRead],
    responses=error_responses(401),
    tags=["admin"],
)
async def list_licenses(caller: CallerDep, service: ServiceDep) -> list[LicenseRead]:
    """Every licence (staff) or the account's own."""
    return await service.list_licenses(caller)


@router.get(
    "/admin/licenses/{license_id}",
    response_model=LicenseRead,
    responses=error_responses(401, 403, 404),
    tags=["admin"],
)
async def get_license(license_id: str, caller: CallerDep, service: ServiceDep) -> LicenseRead:
    return await service.get_license(caller, license_id)


@router.patch(
    "/admin/licenses/{license_id}",
    response_model=LicenseRead,
    responses=error_responses(401, 403, 404),
    tags=["admin"],
)
async def update_license(
    license_id: str, body: LicenseUpdate, caller: CallerDep, service: ServiceDep
) -> LicenseRead:
    """Change tier, status, instance limit or expiry (staff only)."""
    return await service.update_license(caller, license_id, body)


@router.post(
    "/admin/licenses/{license_id}/offline-file",
    response_class=Response,
    responses={
        200: {
            "description": "the offline licence file (license-offline.jwt)",
            "content": {"application/jwt": {"schema": {"type": "string"}}},
        },
        **error_responses(401, 403, 404),
    },
    tags=["admin"],
)
async def offline_file(license_id: str, caller: CallerDep, service: ServiceDep) -> Response:
    """An offline licence file for an active Pro or Enterprise licence the caller owns.

    Valid until the licence expires, at most 366 days; it cannot be revoked, so every
    condition is checked again here. Upload it in the monitor's Settings, License.
    """
    token, expires_ms = await service.offline_file(caller, license_id)
    return Response(
        token + "\n",
        media_type="application/jwt",
        headers={
            "Content-Disposition": 'attachment; filename="license-offline.jwt"',
            "X-License-Expires-At": str(expires_ms),
            "Cache-Control": "no-store",
        },
    )
