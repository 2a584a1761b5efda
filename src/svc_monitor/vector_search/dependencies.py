"""FastAPI dependencies of the vector search domain."""

from typing import Annotated

from fastapi import Depends

from svc_monitor.api.dependencies import FeaturesDep
from svc_monitor.vector_search.service import VectorSearchService


def get_vector_search(features: FeaturesDep) -> VectorSearchService:
    return features.vector_search


VectorSearchDep = Annotated[VectorSearchService, Depends(get_vector_search)]
