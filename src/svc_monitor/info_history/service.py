"""INFO history (written from the pipe, read by the API) and live INFO reads."""

import asyncio
import logging
import math
from collections.abc import Sequence
from typing import Any

from svc_monitor.config import Settings
from svc_monitor.engine.client import EngineClient
from svc_monitor.engine.ledger import CommandLedger
from svc_monitor.events import now_ms
from svc_monitor.info_history.models import MemoryBucket
from svc_monitor.info_history.sampling import Sampler
from svc_monitor.info_history.schemas import (
    CommandLoad,
    HistoryPoint,
    HistorySeries,
    MemorySnapshot,
    MonitorLoad,
)
from svc_monitor.info_history.store import ROLLUP_MS, SERIES, MetricsStore, memory_snapshots
from svc_monitor.kit.records import from_attributes
from svc_monitor.pipe.observation import Observation

logger = logging.getLogger(__name__)

_HOUR_MS = 3_600_000


class InfoHistoryService:
    """Records sampled INFO history and answers history and live reads."""

    def __init__(self, store: MetricsStore, settings: Settings) -> None:
        self._store = store
        self._sampler = Sampler(settings.HISTORY_SAMPLE_INTERVAL_MS)
        # Passes of run_rollups finished (or failed) so far: lets a caller know the
        # catch-up pass after start is over.
        self.rollup_passes = 0

    def observe(self, observation: Observation) -> None:
        """As an observation consumer of the pipe: keep a sampled row when one is due
        (written within a second, with every other connection's: storage/insert_batcher.py)."""
        if observation.node is not None or not self._sampler.due(observation):
            return
        memory, stats = self._sampler.rows(observation)
        # A pushed instance gets a memory snapshot only when used_memory was pushed.
        keep_memory = not observation.pushed or memory["used_memory"] is not None
        self._store.add([memory] if keep_memory else [], [stats])

    async def memory_snapshots(
        self, connection_id: str, *, since: int | None, until: int | None, limit: int, offset: int
    ) -> list[MemorySnapshot]:
        rows = await self._store.range(
            memory_snapshots, connection_id, since=since, until=until, limit=limit, offset=offset
        )
        return [from_attributes(MemorySnapshot, r) for r in rows]

    async def history(
        self, connection_id: str, *, since: int | None, until: int | None, max_points: int
    ) -> HistorySeries:
        """Stats samples averaged into at most `max_points` equal buckets, in SQL."""
        until = until if until is not None else now_ms()
        since = since if since is not None else until - _HOUR_MS
        bucket_ms = max(1, math.ceil((until - since + 1) / max_points))
        rows = await self._store.series(
            connection_id, since=since, until=until, bucket_ms=bucket_ms
        )
        names = tuple(SERIES)
        # Built without validation: the values come from our own query, already typed,
        # and a week's chart has 1,000 points of 14 fields (bench/ui_pages.py).
        points = []
        for row in rows:
            bucket, samples, *values = tuple(row)
            fields: dict[str, Any] = {
                name: _float(v) for name, v in zip(names, values, strict=True)
            }
            fields.update(t=since + int(bucket) * bucket_ms, samples=int(samples))
            points.append(HistoryPoint.model_construct(**fields))
        return HistorySeries(
            connectionId=connection_id, from_=since, to=until, bucketMs=bucket_ms, points=points
        )

    async def memory_buckets(
        self, connection_id: str, *, since: int, until: int, max_points: int
    ) -> list[MemoryBucket]:
        """Memory snapshots averaged into at most `max_points` equal buckets, in SQL (the
        forecasts' input: a 24 h window is 8,640 snapshots at the default interval)."""
        bucket_ms = max(1, math.ceil((until - since + 1) / max_points))
        rows: Sequence[Any] = await self._store.memory_buckets(
            connection_id, since=since, until=until, bucket_ms=bucket_ms
        )
        # Unpacked as tuples: reading Row attributes by name was 60 % of a forecast's time.
        return [
            MemoryBucket(
                int(float(at)), _plain(used), _plain(limit), _plain(ops), _plain(cpu), _plain(frag)
            )
            for _, at, used, limit, ops, cpu, frag in rows
        ]

    async def live_info(self, client: EngineClient, sections: list[str]) -> dict[str, Any]:
        info = await client.info(*sections) if sections else await client.info("everything")
        return dict(info.sections)

    @staticmethod
    def monitor_load(connection_id: str, ledger: CommandLedger) -> MonitorLoad:
        minutes = max((now_ms() - ledger.since_ms) / 60_000, 1 / 60)
        commands = [
            CommandLoad(
                command=name,
                calls=cost.calls,
                errors=cost.errors,
                totalMs=round(cost.seconds * 1000, 3),
                avgMs=round(cost.seconds * 1000 / cost.calls, 3) if cost.calls else 0.0,
                perMinute=round(cost.calls / minutes, 2),
            )
            for name, cost in sorted(ledger.costs().items(), key=lambda kv: -kv[1].calls)
        ]
        total = sum(c.calls for c in commands)
        return MonitorLoad(
            connectionId=connection_id,
            since=ledger.since_ms,
            totalCalls=total,
            perMinute=round(total / minutes, 2),
            commands=commands,
        )

    async def run_rollups(self, *, every_s: float = 60.0) -> None:
        """Keep the five-minute rollups current; the first pass catches up after a restart."""
        rolled_until: int | None = None
        while True:
            # Nothing new to average until another five minutes have finished.
            finished = now_ms() // ROLLUP_MS
            if finished != rolled_until:
                try:
                    await self._store.roll_up(now_ms=now_ms())
                    rolled_until = finished
                except Exception:  # storage hiccup: the next pass resumes where it stopped
                    logger.exception("rolling up the INFO history failed")
            self.rollup_passes += 1
            await asyncio.sleep(every_s)

    async def carry_on(self, connection_ids: Sequence[str]) -> None:
        """Connections taken over from another replica: sample them on its cadence."""
        for row in await self._store.last_samples(connection_ids):
            self._sampler.carry_on(
                row.connection_id, row.captured_at, row.keyspace_hits, row.keyspace_misses
            )

    def forget(self, connection_id: str) -> None:
        self._sampler.forget(connection_id)


def _float(value: Any) -> float | None:
    return None if value is None else round(float(value), 4)


def _plain(value: Any) -> float | None:
    """SQL AVG gives Decimal on PostgreSQL for integer columns."""
    return None if value is None else float(value)
