"""FastAPI dependencies of the audit domain."""

from typing import Annotated

from fastapi import Depends

from svc_monitor.audit.service import AuditService
from svc_monitor.services import ServicesDep


def get_audit(services: ServicesDep) -> AuditService:
    return services.audit


AuditDep = Annotated[AuditService, Depends(get_audit)]
