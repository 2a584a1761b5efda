"""A connection taken over from another replica is sampled on the cadence the other kept:
the next history sample is due an interval after the last one stored, not at once."""

from sqlalchemy import select

from svc_monitor.config import StorageType
from svc_monitor.engine.info import parse_info
from svc_monitor.info_history.service import InfoHistoryService
from svc_monitor.info_history.store import MetricsStore, stats_samples
from svc_monitor.pipe.observation import Observation
from svc_monitor.storage.database import Database
from tests.fixtures.app import make_settings

INFO = b"# Stats\r\nkeyspace_hits:100\r\nkeyspace_misses:100\r\n# CPU\r\nused_cpu_sys:1.0\r\n"


def observed(at_ms: int, hits: int) -> Observation:
    raw = INFO.replace(b"keyspace_hits:100", f"keyspace_hits:{hits}".encode())
    return Observation(connection_id="c1", received_at_ms=at_ms, info=parse_info(raw))


async def test_the_next_sample_is_due_an_interval_after_the_other_replica_s_last() -> None:
    db = Database.open(StorageType.MEMORY)
    await db.migrate()
    try:
        store = MetricsStore(db)
        service = InfoHistoryService(store, make_settings(HISTORY_SAMPLE_INTERVAL_MS=10_000))
        stored = {"connection_id": "c1", "captured_at": 50_000, "keyspace_hits": 100}
        await store.insert([], [{**stored, "keyspace_misses": 100}])
        await service.carry_on(["c1", "never-sampled"])
        service.observe(observed(53_000, hits=150))  # three seconds after: not yet
        service.observe(observed(60_000, hits=300))  # an interval after: due
        await db.inserts.flush()
        s = stats_samples.c
        rows = await db.fetch_all(
            select(s.captured_at, s.hit_ratio)
            .where(s.connection_id == "c1")
            .order_by(s.captured_at)
        )
        # The hit ratio of the interval since the other replica's sample: 200 hits of 200.
        assert [(r.captured_at, r.hit_ratio) for r in rows] == [(50_000, None), (60_000, 1.0)]
    finally:
        await db.close()
