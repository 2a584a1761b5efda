"""FastAPI dependencies of the migration domain."""

from typing import Annotated

from fastapi import Depends

from svc_monitor.api.dependencies import registered
from svc_monitor.migration.service import MigrationService

MigrationDep = Annotated[MigrationService, Depends(registered(MigrationService))]
