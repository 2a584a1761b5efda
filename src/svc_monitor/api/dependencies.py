"""How a route reaches the object graph: the services built before the server listens,
and the feature domains once they are installed (503 with Retry-After until then)."""

from typing import Annotated

from fastapi import Depends, Request

from svc_monitor.errors import Unavailable
from svc_monitor.services import Features, Services


def get_services(request: Request) -> Services:
    services: Services = request.app.state.services
    return services


def get_features(request: Request) -> Features:
    features: Features | None = getattr(request.app.state, "features", None)
    if features is None:  # a route of a feature cannot run before its feature is installed
        raise Unavailable("svc-monitor is still starting; retry in a moment")
    return features


ServicesDep = Annotated[Services, Depends(get_services)]
FeaturesDep = Annotated[Features, Depends(get_features)]
