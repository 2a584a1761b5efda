"""FastAPI dependencies of the audit domain."""

from typing import Annotated

from fastapi import Depends

from svc_monitor.audit.service import AuditService
from svc_monitor.services import FeaturesDep


def get_audit(features: FeaturesDep) -> AuditService:
    return features.audit


AuditDep = Annotated[AuditService, Depends(get_audit)]
