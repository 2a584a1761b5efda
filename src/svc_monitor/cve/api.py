"""CVE and end-of-life findings (under /api)."""

from fastapi import APIRouter

from svc_monitor.api.error_responses import error_responses
from svc_monitor.connections.dependencies import SelectedConnection
from svc_monitor.cve.dependencies import CveDep
from svc_monitor.cve.schemas import CveFindingsRead

router = APIRouter(tags=["security"])


@router.get(
    "/cve/findings",
    response_model=CveFindingsRead,
    responses=error_responses(404),
)
async def get_cve_findings(connection: SelectedConnection, cve: CveDep) -> CveFindingsRead:
    """The selected connection's last CVE scan: its engine and version, when it was scanned,
    the CVEs and advisories that apply (KEV first, then by severity; each with the first
    fixed release on its line and when it was first seen), the end-of-life status of its
    minor version, and the module advisories the version cannot verify.

    Before any version is known the answer is still 200, with `status`
    `waiting_for_version`, empty findings and a `message`; for a push connection,
    `missingAttribute` names the resource attribute to set (`redis.version`, or
    `valkey.version` with `db.system.name=valkey` for Valkey). A stored scan outlives a
    restart: it is answered until the next scan replaces it."""
    return await cve.findings(connection)
