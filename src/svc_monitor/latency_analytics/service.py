"""Latency history from LATENCY LATEST and LATENCY HISTOGRAM polls.

An event is stored when its latest spike time moves, so a quiet server adds no rows
however often it is polled; the last time seen per (connection, event) is kept in memory
and, on the first poll after a restart, read back from storage. A histogram is stored
whole once per poll where the engine has one (Redis 7+, Valkey).
"""

from svc_monitor.engine.latency import CommandHistogram, LatencyEvent
from svc_monitor.kit.records import from_attributes
from svc_monitor.latency_analytics.schemas import (
    HistogramEntry,
    LatencyHistogramRead,
    LatencySnapshotRead,
)
from svc_monitor.latency_analytics.store import LatencyStore, latency_histograms, latency_snapshots


class LatencyAnalyticsService:
    """Records latency polls and answers the latency history routes."""

    def __init__(self, store: LatencyStore) -> None:
        self._store = store
        self._seen: dict[str, dict[str, int]] = {}

    async def record(
        self,
        connection_id: str,
        *,
        captured_at: int,
        events: list[LatencyEvent],
        histogram: dict[str, CommandHistogram] | None,
    ) -> None:
        seen = self._seen.get(connection_id)
        if seen is None:
            seen = self._seen[connection_id] = await self._store.latest_event_times(connection_id)
        snapshots = []
        moved: dict[str, int] = {}
        for event in events:
            at_ms = event.latest_at_s * 1000
            if seen.get(event.name) == at_ms:
                continue
            moved[event.name] = at_ms
            snapshots.append(
                {
                    "connection_id": connection_id,
                    "captured_at": captured_at,
                    "event_name": event.name[:64],
                    "latest_event_at": at_ms,
                    "latest_ms": event.latest_ms,
                    "max_ms": event.max_ms,
                }
            )
        row = None
        if histogram:
            row = {
                "connection_id": connection_id,
                "captured_at": captured_at,
                "data": {
                    name: {"calls": h.calls, "histogram": h.histogram}
                    for name, h in histogram.items()
                },
            }
        # Queued, written within a second; kept through a storage outage (the batcher's
        # bound aside), so these spikes are not new to the next poll.
        self._store.add(snapshots, row)
        seen.update(moved)

    async def snapshots(
        self, connection_id: str, *, since: int | None, until: int | None, limit: int, offset: int
    ) -> list[LatencySnapshotRead]:
        rows = await self._store.range(
            latency_snapshots, connection_id, since=since, until=until, limit=limit, offset=offset
        )
        return [from_attributes(LatencySnapshotRead, r) for r in rows]

    async def histograms(
        self, connection_id: str, *, since: int | None, until: int | None, limit: int, offset: int
    ) -> list[LatencyHistogramRead]:
        rows = await self._store.range(
            latency_histograms, connection_id, since=since, until=until, limit=limit, offset=offset
        )
        return [
            LatencyHistogramRead(
                id=r.id,
                capturedAt=r.captured_at,
                data={name: HistogramEntry.model_validate(v) for name, v in r.data.items()},
            )
            for r in rows
        ]

    def forget(self, connection_id: str) -> None:
        self._seen.pop(connection_id, None)
