"""FastAPI dependencies of the runtime settings domain."""

from typing import Annotated

from fastapi import Depends

from svc_monitor.api.dependencies import ServicesDep
from svc_monitor.runtime_settings.service import RuntimeSettingsService


def get_runtime_settings(services: ServicesDep) -> RuntimeSettingsService:
    return services.runtime_settings


RuntimeSettingsDep = Annotated[RuntimeSettingsService, Depends(get_runtime_settings)]
