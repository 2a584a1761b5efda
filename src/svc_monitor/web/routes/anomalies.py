"""Anomalies (Pro): the selected connection's correlated groups, newest first, with their
diagnosis and next step, and each metric's baseline buffer (warm-up and readiness).

Reads go through AnomalyService, as GET /api/anomaly/* do. A Community install sees the
page locked; it works for pushed connections (on the fields they push).
"""

from fastapi import APIRouter
from fastapi.responses import HTMLResponse

from svc_monitor.anomaly.detectors import READY_AT, WINDOW
from svc_monitor.licensing.gates import FeatureLocked
from svc_monitor.licensing.tiers import Feature
from svc_monitor.web.dependencies import UiDep
from svc_monitor.web.pages import Page

PAGE = Page("anomalies", "/anomalies", "Anomalies")
router = APIRouter(include_in_schema=False)
GROUPS_SHOWN = 50


@router.get("/anomalies")
async def anomalies_page(ui: UiDep) -> HTMLResponse:
    """Correlated anomaly groups and baseline buffers of the selected connection (Pro)."""
    license = ui.services.license
    if not license.allows(Feature.ANOMALY_DETECTION):
        locked = FeatureLocked(Feature.ANOMALY_DETECTION, license.tier)
        return ui.page(PAGE, "anomalies/page.html", locked=locked.message, off=False)
    anomaly = ui.features.anomaly
    if not anomaly.enabled:
        return ui.page(PAGE, "anomalies/page.html", locked=None, off=True)
    connection = ui.shell.connection
    groups, buffers = [], []
    if connection is not None:
        groups = await anomaly.groups(
            connection.id, since=None, until=None, pattern=None, resolved=None, limit=GROUPS_SHOWN
        )
        buffers = anomaly.buffers(connection.id)
    return ui.page(
        PAGE,
        "anomalies/page.html",
        locked=None,
        off=False,
        groups=groups,
        buffers=buffers,
        ready_at=READY_AT,
        window=WINDOW,
    )
