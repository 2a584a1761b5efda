"""FastAPI dependencies of the CVE domain."""

from typing import Annotated

from fastapi import Depends

from svc_monitor.cve.service import CveService
from svc_monitor.services import FeaturesDep


def get_cve(features: FeaturesDep) -> CveService:
    return features.cve


CveDep = Annotated[CveService, Depends(get_cve)]
