"""How a route reaches the object graph: the services built before the server listens,
and the feature domains once they are installed (503 with Retry-After until then)."""

from collections.abc import Callable
from typing import Annotated, TypeVar

from fastapi import Depends, Request
from starlette.requests import HTTPConnection

from svc_monitor.errors import Unavailable
from svc_monitor.parts import Registry
from svc_monitor.services import Features, Services

T = TypeVar("T")


def get_services(request: Request) -> Services:
    services: Services = request.app.state.services
    return services


def get_features(request: Request) -> Features:
    features: Features | None = getattr(request.app.state, "features", None)
    if features is None:  # a route of a feature cannot run before its feature is installed
        raise Unavailable("svc-monitor is still starting; retry in a moment")
    return features


def registered(kind: type[T]) -> Callable[[HTTPConnection], T]:
    """A dependency on a feature part's service, by type (`registered(SlowlogService)`):
    a new domain's dependencies.py reaches its service without a field on `Features`.
    Requests and WebSockets alike (both are an HTTPConnection)."""

    def get(request: HTTPConnection) -> T:
        registry: Registry | None = getattr(request.app.state, "registry", None)
        if registry is None:
            raise Unavailable("svc-monitor is still starting; retry in a moment")
        return registry.get(kind)

    return get


ServicesDep = Annotated[Services, Depends(get_services)]
FeaturesDep = Annotated[Features, Depends(get_features)]
