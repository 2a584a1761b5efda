"""The vector search domain's part: search indexes polled, kept, served and scraped."""

from svc_monitor.cluster.service import ClusterService
from svc_monitor.licensing.models import Feature
from svc_monitor.parts import Part, Registry, Watched, addresses
from svc_monitor.polling.models import PollKind
from svc_monitor.polling.vector_index_poll import VectorIndexPoller
from svc_monitor.prometheus.families.vector_search import VectorIndexCollector
from svc_monitor.services import Services
from svc_monitor.slowlog.service import SlowlogService
from svc_monitor.vector_search.api import router
from svc_monitor.vector_search.service import VectorSearchService
from svc_monitor.vector_search.store import HISTORY_TABLES, VectorIndexStore


def part(registry: Registry) -> Part:
    s = registry.get(Services)

    async def slow_entries(
        connection_id: str, since: int, until: int | None, commands: frozenset[str], limit: int
    ) -> list[tuple[int, str, str | None, int]]:
        return await registry.get(SlowlogService).timed_durations(
            connection_id, since_ms=since, until_ms=until, commands=commands, limit=limit
        )

    vector_search = registry.add(
        VectorSearchService,
        VectorSearchService(
            VectorIndexStore(s.db),
            s.connections,
            s.runtime_settings,
            s.bus,
            backfill_alert_ms=s.settings.VECTOR_BACKFILL_ALERT_MS,
            latency_window_ms=s.settings.SEARCH_LATENCY_WINDOW_MS,
            unhealthy_p50_us=s.settings.SEARCH_UNHEALTHY_P50_US,
            sla_debounce_ms=s.settings.SEARCH_SLA_DEBOUNCE_MS,
            sla_allowed=lambda: s.license.allows(Feature.SEARCH_SLA),
            slow_entries=slow_entries,
        ),
    )

    def poll_kinds() -> list[PollKind]:
        return [
            VectorIndexPoller(
                vector_search, registry.get(SlowlogService), registry.get(ClusterService)
            ).kind()
        ]

    return Part(
        name="vector search",
        routers=(router,),
        poll_kinds=poll_kinds,
        collectors=lambda: [
            VectorIndexCollector(vector_search, lambda: addresses(registry.get(Watched).polled()))
        ],
        history_tables=HISTORY_TABLES,
    )
