"""Settings, License: the tier in force, the paid features (locked ones marked), and
offline activation by paste or upload, removal, and a check now.

The same LicenseService calls as /api/license/*, and the same upload parsing.
"""

from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from svc_monitor.errors import AppError
from svc_monitor.licensing.dependencies import token_from_form
from svc_monitor.licensing.models import FEATURE_TIERS, Feature, Tier
from svc_monitor.licensing.schemas import LicenseStatusRead
from svc_monitor.web.dependencies import FromThisPage, Ui, UiDep

router = APIRouter(include_in_schema=False)


@dataclass(frozen=True, slots=True)
class FeatureRow:
    feature: Feature
    tier: Tier
    unlocked: bool


def license_context(
    ui: Ui, *, message: str | None = None, error: str | None = None
) -> dict[str, Any]:
    license = ui.services.license
    return {
        "license": LicenseStatusRead.of(license, telemetry_enabled=ui.services.telemetry.enabled),
        "feature_rows": [
            FeatureRow(feature, tier, license.allows(feature))
            for feature, tier in FEATURE_TIERS.items()
        ],
        "license_message": message,
        "license_error": error,
    }


def _panel(ui: Ui, *, message: str | None = None, error: str | None = None) -> HTMLResponse:
    return ui.fragment("settings/license.html", **license_context(ui, message=message, error=error))


@router.post("/ui/license/offline", dependencies=[FromThisPage])
async def activate_offline(request: Request, ui: UiDep) -> HTMLResponse:
    try:
        token = await token_from_form(request)
        entitlement = await ui.services.license.activate_offline(token)
    except AppError as exc:
        return _panel(ui, error=f"Not activated: {exc.message}. Nothing was changed.")
    return _panel(ui, message=f"Offline licence activated: {entitlement.tier.label}.")


@router.post("/ui/license/offline/remove", dependencies=[FromThisPage])
async def remove_offline(ui: UiDep) -> HTMLResponse:
    try:
        await ui.services.license.remove_offline()
    except AppError as exc:
        return _panel(ui, error=exc.message)
    return _panel(ui, message="Offline licence removed.")


@router.post("/ui/license/refresh", dependencies=[FromThisPage])
async def refresh(ui: UiDep) -> HTMLResponse:
    entitlement = await ui.services.license.refresh()
    return _panel(ui, message=f"Checked: {entitlement.tier.label} ({entitlement.source.value}).")
