import asyncio
import time
from typing import Any

from sqlalchemy import func, select

from svc_monitor.info_history.store import memory_snapshots, stats_samples
from svc_monitor.storage.database import Database
from svc_monitor.storage.retention import DAY_MS, HistoryRetention
from tests.fixtures.app import make_settings

NOW = 1_800_000_000_000


async def fill(db: Database, *, ages_days: list[float], now: int = NOW) -> None:
    rows = [{"connection_id": "c1", "captured_at": int(now - age * DAY_MS)} for age in ages_days]
    await db.run(lambda conn: conn.execute(memory_snapshots.insert(), rows))
    await db.run(lambda conn: conn.execute(stats_samples.insert(), rows))


async def ages_left(db: Database) -> list[float]:
    rows = await db.fetch_all(select(memory_snapshots.c.captured_at).order_by("captured_at"))
    return [round((NOW - r.captured_at) / DAY_MS, 1) for r in rows]


class TestRetention:
    async def test_window_removes_only_older_history(self, db: Database):
        await fill(db, ages_days=[40, 31, 29, 1, 0])
        retention = HistoryRetention(
            db, [memory_snapshots, stats_samples], retention_days=30, row_cap=None
        )
        assert await retention.sweep(now_ms=NOW) == 4
        assert await ages_left(db) == [29.0, 1.0, 0.0]

    async def test_unset_window_keeps_everything(self, db: Database):
        await fill(db, ages_days=[4000, 1])
        retention = HistoryRetention(
            db, [memory_snapshots, stats_samples], retention_days=None, row_cap=None
        )
        assert await retention.sweep(now_ms=NOW) == 0
        assert await ages_left(db) == [4000.0, 1.0]

    async def test_cap_keeps_the_newest_rows(self, db: Database):
        await fill(db, ages_days=[5, 4, 3, 2, 1])
        retention = HistoryRetention(db, [memory_snapshots], retention_days=None, row_cap=2)
        assert await retention.trim() == 3
        assert await ages_left(db) == [2.0, 1.0]
        count = await db.fetch_one(select(func.count()).select_from(stats_samples))
        assert count is not None
        assert count[0] == 5  # only the tables handed in are trimmed


class TestRetentionInTheService:
    async def test_startup_sweep_removes_history_past_the_window(
        self, valkey_server, persistent_storage: dict[str, Any]
    ):
        from tests.fixtures.app import running_app, target_of

        now = int(time.time() * 1000)
        settings = make_settings(**target_of(valkey_server), **persistent_storage)
        async with running_app(settings) as app:
            await fill(app.services.db, ages_days=[400, 10, 0], now=now)
        kept = make_settings(
            **target_of(valkey_server), **persistent_storage, LOCAL_RETENTION_DAYS=30
        )
        async with running_app(kept) as app:

            async def swept() -> bool:
                rows = await app.services.db.fetch_all(select(memory_snapshots.c.captured_at))
                return all(r.captured_at > now - 30 * DAY_MS for r in rows)

            for _ in range(50):
                if await swept():
                    break
                await asyncio.sleep(0.05)
            old = await app.services.db.fetch_all(
                select(memory_snapshots).where(memory_snapshots.c.captured_at < now - 30 * DAY_MS)
            )
            kept_rows = await app.services.db.fetch_all(
                select(memory_snapshots).where(memory_snapshots.c.connection_id == "c1")
            )
        assert old == []
        assert len(kept_rows) == 2  # 10 days and today stay
