"""The key analytics domain's part: key patterns, sizes and hot keys sampled and served."""

from svc_monitor.key_analytics.api import router
from svc_monitor.key_analytics.service import KeyAnalyticsService
from svc_monitor.key_analytics.store import HISTORY_TABLES, KeyAnalyticsStore
from svc_monitor.licensing.models import Feature
from svc_monitor.parts import Part, Registry, Watched, addresses
from svc_monitor.polling.key_analytics_poll import KeyAnalyticsPoller
from svc_monitor.polling.models import PollKind
from svc_monitor.prometheus.families.key_analytics import KeyAnalyticsCollector
from svc_monitor.prometheus.service import PrometheusService
from svc_monitor.services import Services


def part(registry: Registry) -> Part:
    s = registry.get(Services)
    license = s.license
    analytics = registry.add(
        KeyAnalyticsService,
        KeyAnalyticsService(KeyAnalyticsStore(s.db), s.connections, s.live_state, s.settings),
    )

    def poll_kinds() -> list[PollKind]:
        allowed = lambda: license.allows(Feature.KEY_ANALYTICS)  # noqa: E731
        return [KeyAnalyticsPoller(analytics, allowed=allowed).kind()]

    return Part(
        name="key analytics",
        routers=(router,),
        poll_kinds=poll_kinds,
        collectors=lambda: [
            KeyAnalyticsCollector(
                analytics,
                lambda: addresses(registry.get(Watched).polled()),
                full=lambda: registry.get(PrometheusService).full_profile,
            )
        ],
        history_tables=HISTORY_TABLES,
    )
