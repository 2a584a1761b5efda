"""HTTP routes of the runtime settings (under /api)."""

from fastapi import APIRouter

from svc_monitor.api.error_responses import error_responses
from svc_monitor.runtime_settings.dependencies import RuntimeSettingsDep
from svc_monitor.runtime_settings.schemas import RuntimeSettingsRead, RuntimeSettingsUpdate

router = APIRouter(prefix="/settings", tags=["settings"])


@router.get("", response_model=RuntimeSettingsRead)
async def get_settings(settings: RuntimeSettingsDep) -> RuntimeSettingsRead:
    """The runtime settings in force (poll intervals, anomaly cache, history retention)."""
    return await settings.read()


@router.put("", response_model=RuntimeSettingsRead, responses=error_responses(409, 422))
async def update_settings(
    body: RuntimeSettingsUpdate, settings: RuntimeSettingsDep
) -> RuntimeSettingsRead:
    """Change some settings; intervals are positive integers of milliseconds.

    `retentionDays` is the history window in days (1 to 36500), or null to keep history
    forever; the retention sweeps use the new value from their next run. Saved in storage
    and kept across restarts, except with STORAGE_TYPE=memory. In cloud mode the window is
    the licence tier's (Community 7 days, Pro 90, Enterprise 365): another `retentionDays`
    is refused with 409, and the window in force sent back is taken as no change.
    """
    return await settings.update(body)


@router.post("/reset", response_model=RuntimeSettingsRead)
async def reset_settings(settings: RuntimeSettingsDep) -> RuntimeSettingsRead:
    """Forget saved changes: every setting goes back to its environment default (the
    retention window to LOCAL_RETENTION_DAYS, or in cloud mode the licence tier's)."""
    return await settings.reset()
