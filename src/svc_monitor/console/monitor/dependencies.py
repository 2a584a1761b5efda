"""FastAPI dependencies of the MONITOR captures (for HTTP routes and the tail socket alike)."""

from typing import Annotated

from fastapi import Depends, Header
from starlette.requests import HTTPConnection

from svc_monitor.console.monitor.service import MonitorService
from svc_monitor.errors import Unavailable


def get_monitor(connection: HTTPConnection) -> MonitorService:
    features = getattr(connection.app.state, "features", None)
    if features is None:  # a feature route cannot run before its feature is installed
        raise Unavailable("svc-monitor is still starting; retry in a moment")
    monitor: MonitorService = features.monitor
    return monitor


MonitorDep = Annotated[MonitorService, Depends(get_monitor)]

# Routes by capture id find it by its id alone (so a download link needs no header);
# a client that names a connection gets 404 for another connection's capture.
CaptureConnection = Annotated[
    str | None,
    Header(
        alias="X-Connection-Id",
        max_length=64,
        description="When given, the capture must have been taken on this connection",
    ),
]
