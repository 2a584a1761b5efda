"""HTTP routes of the runtime settings (under /api)."""

from fastapi import APIRouter

from svc_monitor.api.error_responses import error_responses
from svc_monitor.runtime_settings.dependencies import RuntimeSettingsDep
from svc_monitor.runtime_settings.schemas import RuntimeSettingsRead, RuntimeSettingsUpdate

router = APIRouter(prefix="/settings", tags=["settings"])


@router.get("", response_model=RuntimeSettingsRead)
async def get_settings(settings: RuntimeSettingsDep) -> RuntimeSettingsRead:
    """The runtime settings in force (poll intervals and anomaly cache), no restart needed."""
    return await settings.read()


@router.put("", response_model=RuntimeSettingsRead, responses=error_responses(422))
async def update_settings(
    body: RuntimeSettingsUpdate, settings: RuntimeSettingsDep
) -> RuntimeSettingsRead:
    """Change some settings; values are positive integers of milliseconds.

    Saved in storage and kept across restarts, except with STORAGE_TYPE=memory.
    """
    return await settings.update(body)


@router.post("/reset", response_model=RuntimeSettingsRead)
async def reset_settings(settings: RuntimeSettingsDep) -> RuntimeSettingsRead:
    """Forget saved changes: every setting goes back to its environment default."""
    return await settings.reset()
