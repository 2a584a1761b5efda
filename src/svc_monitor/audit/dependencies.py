"""FastAPI dependencies of the audit domain."""

from typing import Annotated

from fastapi import Depends

from svc_monitor.api.dependencies import FeaturesDep
from svc_monitor.audit.service import AuditService


def get_audit(features: FeaturesDep) -> AuditService:
    return features.audit


AuditDep = Annotated[AuditService, Depends(get_audit)]
