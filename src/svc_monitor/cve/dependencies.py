"""FastAPI dependencies of the CVE domain."""

from typing import Annotated

from fastapi import Depends

from svc_monitor.api.dependencies import FeaturesDep
from svc_monitor.cve.service import CveService


def get_cve(features: FeaturesDep) -> CveService:
    return features.cve


CveDep = Annotated[CveService, Depends(get_cve)]
