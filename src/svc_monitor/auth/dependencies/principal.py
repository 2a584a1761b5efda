"""What workspace routes are handed: the auth service and the signed-in user."""

from typing import Annotated

from fastapi import Depends, Request

from svc_monitor.auth.dependencies.access import principal_of
from svc_monitor.auth.models import Principal
from svc_monitor.auth.service import AuthService
from svc_monitor.errors import NotFound, Unauthorized


def get_auth(request: Request) -> AuthService:
    auth: AuthService = request.app.state.services.auth
    return auth


def workspace_on(auth: Annotated[AuthService, Depends(get_auth)]) -> AuthService:
    """The service, or 404 when WORKSPACE_DISABLED turned user control off."""
    if not auth.enabled:
        raise NotFound("User control is off on this install (WORKSPACE_DISABLED=true)")
    return auth


def signed_in(request: Request, auth: Annotated[AuthService, Depends(workspace_on)]) -> Principal:
    principal = principal_of(request)
    if principal is None:
        raise Unauthorized("Sign in to use svc-monitor")
    return principal


AuthDep = Annotated[AuthService, Depends(get_auth)]
WorkspaceDep = Annotated[AuthService, Depends(workspace_on)]
PrincipalDep = Annotated[Principal, Depends(signed_in)]
