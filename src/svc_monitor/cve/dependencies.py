"""FastAPI dependencies of the CVE domain."""

from typing import Annotated

from fastapi import Depends

from svc_monitor.api.dependencies import ServicesDep
from svc_monitor.cve.service import CveService


def get_cve(services: ServicesDep) -> CveService:
    return services.cve


CveDep = Annotated[CveService, Depends(get_cve)]
