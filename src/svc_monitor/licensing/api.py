"""/api/license: status, the feature table, a check now, offline activation and removal."""

from typing import Any

from fastapi import APIRouter, Request

from svc_monitor.api.dependencies import ServicesDep
from svc_monitor.api.error_responses import error_responses
from svc_monitor.licensing.dependencies import token_from_request
from svc_monitor.licensing.models import FEATURE_TIERS
from svc_monitor.licensing.schemas import (
    FeatureRead,
    FeaturesRead,
    LicenseStatusRead,
    OfflineLicenseWrite,
)

router = APIRouter(prefix="/license", tags=["license"])


def _status(services: ServicesDep) -> LicenseStatusRead:
    return LicenseStatusRead.of(services.license, telemetry_enabled=services.telemetry.enabled)


@router.get("/status", response_model=LicenseStatusRead)
async def get_license_status(services: ServicesDep) -> LicenseStatusRead:
    """The tier in force, its source and mode, expiry, customer, warnings, and whether the
    install is air-gapped or suspects a clock rollback. Never makes a request itself."""
    return _status(services)


@router.get("/features", response_model=FeaturesRead)
async def get_license_features(services: ServicesDep) -> FeaturesRead:
    """Every paid feature, the tier that unlocks it and whether this install has it."""
    license = services.license
    return FeaturesRead(
        tier=license.tier,
        features=[
            FeatureRead(id=f.value, name=f.label, tier=tier, enabled=license.allows(f))
            for f, tier in FEATURE_TIERS.items()
        ],
    )


@router.post("/refresh", response_model=LicenseStatusRead)
async def refresh_license(services: ServicesDep) -> LicenseStatusRead:
    """Check SVC_LICENSE_KEY with the entitlement server now (no request when there is no
    key or the install is air-gapped), then answer the status."""
    await services.license.refresh()
    return _status(services)


_UPLOAD_BODY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {"schema": OfflineLicenseWrite.model_json_schema()},
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "properties": {"file": {"type": "string", "format": "binary"}},
                    "required": ["file"],
                }
            },
            "text/plain": {"schema": {"type": "string", "description": "the token itself"}},
            "application/jwt": {"schema": {"type": "string"}},
        },
    }
}


@router.put(
    "/offline",
    response_model=LicenseStatusRead,
    responses=error_responses(400, 409, 413, 415, 422, 503),
    openapi_extra=_UPLOAD_BODY,
)
async def activate_offline_license(request: Request, services: ServicesDep) -> LicenseStatusRead:
    """Activate an offline licence: JSON `{"token": ...}`, the `.jwt` file uploaded as
    multipart field `file`, or the token as the raw body (text/plain or application/jwt).

    The token is verified before it is saved; a refused one answers 400 with the reason
    and changes nothing. With SVC_LICENSE_KEY set the offline licence is the fallback for
    when the entitlement server cannot be reached; without it the install is air-gapped.
    409 when SVC_OFFLINE_LICENSE pins the licence in the environment.
    """
    token = await token_from_request(request)
    await services.license.activate_offline(token)
    return _status(services)


@router.delete("/offline", response_model=LicenseStatusRead, responses=error_responses(404, 409))
async def remove_offline_license(services: ServicesDep) -> LicenseStatusRead:
    """Remove the activated offline licence (404 when there is none)."""
    await services.license.remove_offline()
    return _status(services)
