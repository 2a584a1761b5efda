"""Security: CVE and end-of-life findings of every connection's engine version.

An overview row per connection (engine, version, KEV and severity counts, end of life),
then the chosen connection's findings (KEV first, then by severity: CveService's order),
its end-of-life status and the module advisories its version cannot verify. A push
connection that has not sent its version gets the resource attribute to set instead.
Everything is read from the stored scans (CveService.findings, as GET /api/cve/findings).
"""

import asyncio
from collections import Counter
from dataclasses import dataclass

from fastapi import APIRouter
from fastapi.responses import HTMLResponse

from svc_monitor.cve.schemas import CveFindingsRead
from svc_monitor.web.dependencies import UiDep
from svc_monitor.web.pages import Page

PAGE = Page("security", "/security", "Security")
router = APIRouter(include_in_schema=False)


@dataclass(frozen=True, slots=True)
class OverviewRow:
    """One connection's scan at a glance."""

    id: str
    name: str
    address: str
    pushed: bool
    scan: CveFindingsRead
    kev: int
    by_severity: Counter[str]


@router.get("/security")
async def security_page(ui: UiDep) -> HTMLResponse:
    """Findings per connection, KEV first; end of life; the missing version attribute."""
    cve = ui.features.cve
    connections = await ui.services.connections.list()
    scans = await asyncio.gather(*(cve.findings(c) for c in connections))
    rows = []
    for connection, scan in zip(connections, scans, strict=True):
        counted = [f for f in scan.findings if f.kind != "end_of_life"]
        rows.append(
            OverviewRow(
                id=connection.id,
                name=connection.name,
                address=f"{connection.host}:{connection.port}",
                pushed=connection.pushed,
                scan=scan,
                kev=sum(f.kev for f in counted),
                by_severity=Counter(f.severity for f in counted),
            )
        )
    chosen = ui.shell.connection
    selected = next((r.scan for r in rows if chosen is not None and r.id == chosen.id), None)
    return ui.page(
        PAGE,
        "security/page.html",
        rows=rows,
        selected=selected,
        dataset=cve.source.dataset,
        dataset_read=rows[0].scan.dataset if rows else None,
        severities=("critical", "high", "medium", "low"),
    )
