"""Key Analytics (Pro): the newest run's key patterns, size distribution per type, the
largest keys, hot keys or why there are none, and when the run was.

Reads go through KeyAnalyticsService, as GET /api/key-analytics/* do. A Community
install sees the page locked (what it would show, and the tier it needs); a push
connection sees the shell's needs-live message (the page is live-only).
"""

from dataclasses import dataclass

from fastapi import APIRouter
from fastapi.responses import HTMLResponse

from svc_monitor.key_analytics.models import SizeBucket, Snapshot, bucket_labels
from svc_monitor.licensing.dependencies import FeatureLocked
from svc_monitor.licensing.models import Feature
from svc_monitor.web.bars import Bar
from svc_monitor.web.dependencies import UiDep
from svc_monitor.web.pages import Page

PAGE = Page("key_analytics", "/key-analytics", "Key Analytics", live_only=True)
router = APIRouter(include_in_schema=False)

BAR_WIDTH = 14
BAR_HEIGHT = 40


@dataclass(frozen=True, slots=True)
class Distribution:
    """One type's keys per MEMORY USAGE bucket, drawn as SVG bars on a shared scale."""

    type: str
    keys: int
    bars: list[Bar[str]]  # bound: the MEMORY USAGE bucket's label


def distributions(buckets: tuple[SizeBucket, ...]) -> list[Distribution]:
    labels = bucket_labels()
    by_type: dict[str, dict[str, int]] = {}
    for b in buckets:
        by_type.setdefault(b.type, {})[b.bucket] = b.keys
    found = []
    for kind, counts in sorted(by_type.items()):
        peak = max(counts.values()) or 1
        bars = []
        for i, label in enumerate(labels):
            keys = counts.get(label, 0)
            # An empty bucket draws nothing; any other at least 1 px, so it shows.
            height = max(1, round(keys / peak * BAR_HEIGHT)) if keys else 0
            bars.append(Bar(i * BAR_WIDTH, height, label, keys))
        found.append(Distribution(kind, sum(counts.values()), bars))
    return found


@router.get("/key-analytics")
async def key_analytics_page(ui: UiDep) -> HTMLResponse:
    """Key patterns and sizes of the selected connection (Pro)."""
    license = ui.services.license
    if not license.allows(Feature.KEY_ANALYTICS):
        locked = FeatureLocked(Feature.KEY_ANALYTICS, license.tier)
        return ui.page(PAGE, "key_analytics/page.html", locked=locked.message, snapshot=None)
    connection = ui.shell.connection
    snapshot: Snapshot | None = None
    if connection is not None and not connection.pushed:
        snapshot = await ui.features.key_analytics.latest_snapshot(connection)
    return ui.page(
        PAGE,
        "key_analytics/page.html",
        locked=None,
        snapshot=snapshot,
        distributions=distributions(snapshot.size_buckets) if snapshot else [],
        interval_minutes=ui.services.settings.KEY_ANALYTICS_INTERVAL_MS / 60_000,
        sample_size=ui.services.settings.KEY_ANALYTICS_SAMPLE_SIZE,
        bar_width=BAR_WIDTH,
        bar_height=BAR_HEIGHT,
    )
