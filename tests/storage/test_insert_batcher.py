"""History rows queued by the poller reach storage together, and survive a storage outage."""

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy import Connection, create_engine, event, func, select

from svc_monitor.commandstats.store import CommandstatsStore, commandstats_samples
from svc_monitor.engine.slowlog import LogEntry
from svc_monitor.info_history.store import MetricsStore, stats_samples
from svc_monitor.latency_analytics.store import LatencyStore, latency_histograms
from svc_monitor.slowlog.models import EntryFilter
from svc_monitor.slowlog.store import SlowlogStore
from svc_monitor.storage.database import Database, StorageClosed
from svc_monitor.storage.insert_batcher import InsertBatcher
from tests.fixtures.app import make_settings


def sample(at: int, connection_id: str = "c1") -> dict[str, Any]:
    return {"connection_id": connection_id, "captured_at": at, "ops_per_sec": at}


async def stored(db: Database) -> list[int]:
    """What is in the table now, read past the batcher (no flush first)."""
    rows = await db.fetch_all(select(stats_samples.c.captured_at).order_by("captured_at"))
    return [row.captured_at for row in rows]


async def renamed(db: Database, old: str, new: str) -> None:
    await db.run(lambda conn: conn.exec_driver_sql(f"ALTER TABLE {old} RENAME TO {new}"))


class TestBatchedWrites:
    async def test_queued_rows_are_written_within_a_second_without_a_read(self, db: Database):
        store = MetricsStore(db)
        store.add([], [sample(1)])
        store.add([], [sample(2, "c2")])
        assert await stored(db) == []  # queued, not yet written
        await asyncio.sleep(1.5)
        assert await stored(db) == [1, 2]

    async def test_a_read_sees_rows_queued_a_moment_ago(self, db: Database):
        store = MetricsStore(db)
        store.add([], [sample(1)])
        rows = await store.range(stats_samples, "c1", since=None, until=None, limit=10)
        assert [row.captured_at for row in rows] == [1]

    async def test_rows_of_several_tables_go_in_one_write(self, db: Database):
        MetricsStore(db).add([], [sample(1)])
        CommandstatsStore(db).add(
            [{**sample(1), "command": "get", "calls": 5, "calls_delta": 5, "interval_ms": 1000}]
        )
        assert db.inserts.pending == 2
        await db.inserts.flush()
        assert db.inserts.pending == 0
        count = await db.fetch_one(select(func.count()).select_from(commandstats_samples))
        assert count is not None
        assert count[0] == 1
        assert await stored(db) == [1]

    async def test_closing_writes_what_is_queued(self, persistent_storage: dict[str, Any]):
        settings = make_settings(**persistent_storage)
        first = Database.from_settings(settings)
        await first.migrate()
        MetricsStore(first).add([], [sample(7)])
        await first.close()
        again = Database.from_settings(settings)
        try:
            assert await stored(again) == [7]
        finally:
            await again.close()

    async def test_nothing_reopens_storage_after_close(self, persistent_storage: dict[str, Any]):
        """A poll finishing after shutdown queues rows: they are counted as dropped, and
        neither the batcher's timer nor a read reopens the closed storage."""
        settings = make_settings(**persistent_storage)
        first = Database.from_settings(settings)
        await first.migrate()
        store = MetricsStore(first)
        store.add([], [sample(1)])
        await first.close()
        store.add([], [sample(2)])
        await asyncio.sleep(1.5)  # past the batcher's delay
        assert first.inserts.dropped == 1
        with pytest.raises(StorageClosed):
            await stored(first)
        again = Database.from_settings(settings)
        try:
            assert await stored(again) == [1]
        finally:
            await again.close()

    async def test_a_json_value_is_stored_as_json_and_read_back_whole(self, db: Database):
        """The batch goes straight to the driver, so the column's own conversion (JSON
        text here) must still be applied on the way."""
        histogram = {"connection_id": "c1", "captured_at": 7, "data": {"get": {"calls": 3}}}
        store = LatencyStore(db)
        store.add([], histogram)
        rows = await store.range(
            latency_histograms, "c1", since=None, until=None, limit=10, offset=0
        )
        assert [row.data for row in rows] == [{"get": {"calls": 3}}]

    async def test_a_thousand_rows_at_once_are_all_stored_in_order(self, db: Database):
        """Several rows go in each INSERT on SQLite, in statements of several sizes."""
        store = MetricsStore(db)
        store.add([], [sample(at) for at in range(1, 1301)])
        await db.inserts.flush()
        assert await stored(db) == list(range(1, 1301))
        rows = await store.range(stats_samples, "c1", since=None, until=2, limit=10)
        assert [(row.captured_at, row.ops_per_sec) for row in rows] == [(1, 1), (2, 2)]

    async def test_rows_hitting_a_unique_key_inside_one_statement_are_left_out(self, db: Database):
        store = SlowlogStore(db)
        entries = [
            LogEntry(i % 40, 1_000, 250, ("GET", "k"), "127.0.0.1:5000", None) for i in range(80)
        ]
        store.add("c1", node="n", log_type=None, entries=entries, captured_at=1)
        await db.inserts.flush()
        rows = await store.entries("c1", EntryFilter(), log_type=None, limit=100)
        assert sorted(row.entry_id for row in rows) == list(range(40))
        assert db.inserts.refused == 0


class TestFewStatementsOnSqlite:
    async def test_a_thousand_rows_take_a_handful_of_statements(self):
        """The SQLite driver lets go of the interpreter lock around every statement step and
        must win it back from the busy event loop: a statement per row kept the storage
        thread, and every request behind it, waiting seconds at a thousand connections."""
        engine = create_engine("sqlite://")
        stats_samples.create(engine)
        steps: list[str] = []  # one per time the driver runs a statement

        def seen(
            _conn: Any, _cursor: Any, sql: str, parameters: Any, _ctx: Any, many: bool
        ) -> None:
            steps.extend([sql] * (len(parameters) if many else 1))

        async def run(work: Callable[[Connection], None]) -> None:
            with engine.begin() as conn:
                work(conn)

        event.listen(engine, "before_cursor_execute", seen)
        batcher = InsertBatcher(run)
        batcher.add(stats_samples, [sample(at) for at in range(1, 1001)])
        await batcher.flush()
        with engine.connect() as conn:
            count = conn.execute(select(func.count()).select_from(stats_samples)).scalar_one()
        engine.dispose()
        assert count == 1000
        assert 1 <= len([sql for sql in steps if sql.startswith("INSERT")]) <= 10


class TestStorageOutage:
    async def test_rows_are_kept_while_writes_fail_and_written_once_they_work(
        self, db: Database, caplog: pytest.LogCaptureFixture
    ):
        store = MetricsStore(db)
        await renamed(db, "stats_samples", "stats_samples_away")
        try:
            store.add([], [sample(1)])
            await asyncio.sleep(1.5)  # the background write fails, and says so once
            assert db.inserts.pending == 1
            assert "history writes failing" in caplog.text
            with pytest.raises(Exception, match="stats_samples"):
                await store.range(stats_samples, "c1", since=None, until=None, limit=10)
            store.add([], [sample(2)])
        finally:
            await renamed(db, "stats_samples_away", "stats_samples")
        await asyncio.sleep(1.5)
        assert await stored(db) == [1, 2]
        assert db.inserts.dropped == 0

    async def test_past_the_bound_the_oldest_rows_go_and_are_counted(self, db: Database):
        batcher = InsertBatcher(db.run, delay_s=0.05, max_rows=3)
        await renamed(db, "stats_samples", "stats_samples_away")
        try:
            for at in range(1, 6):
                batcher.add(stats_samples, [sample(at)])
            await asyncio.sleep(0.2)
        finally:
            await renamed(db, "stats_samples_away", "stats_samples")
        assert batcher.dropped == 2
        await batcher.flush()
        assert await stored(db) == [3, 4, 5]


class TestRowsStorageRefuses:
    async def test_a_row_past_64_bits_is_left_out_and_the_rest_written(self, db: Database):
        store = MetricsStore(db)
        store.add([], [sample(1), {**sample(2), "keyspace_hits": 2**70}, sample(3)])
        await db.inserts.flush()
        assert await stored(db) == [1, 3]
        assert db.inserts.refused == 1
        store.add([], [sample(4)])  # nothing left behind to block the next write
        await db.inserts.flush()
        assert await stored(db) == [1, 3, 4]

    async def test_rows_naming_different_columns_are_written_together(self, db: Database):
        store = MetricsStore(db)
        store.add([], [sample(1), {"connection_id": "c1", "captured_at": 2}])
        await db.inserts.flush()
        assert await stored(db) == [1, 2]
        assert db.inserts.refused == 0


class TestLogEntriesQueuedTwice:
    async def test_an_entry_queued_twice_is_stored_once(self, db: Database):
        store = SlowlogStore(db)
        entry = LogEntry(7, 1_000, 250, ("GET", "k"), "127.0.0.1:5000", None)
        for _ in range(2):  # two polls read the same entry before the write
            store.add("c1", node="n", log_type=None, entries=[entry], captured_at=1)
        await db.inserts.flush()
        store.add("c1", node="n", log_type=None, entries=[entry], captured_at=2)  # and a third
        rows = await store.entries("c1", EntryFilter(), log_type=None, limit=10)
        assert [(row.entry_id, row.captured_at) for row in rows] == [(7, 1)]
        assert db.inserts.refused == 0


class TestABusyWriterWaits:
    async def test_past_the_high_water_mark_the_writer_waits_for_the_write(self, db: Database):
        batcher = InsertBatcher(db.run, delay_s=60, max_rows=100)
        batcher.add(stats_samples, [sample(at) for at in range(1, 10)])
        await batcher.keep_up()  # under a tenth of the bound: nothing to wait for
        assert batcher.pending == 9
        batcher.add(stats_samples, [sample(10)])
        await batcher.keep_up()
        assert batcher.pending == 0
        assert await stored(db) == list(range(1, 11))

    async def test_dropping_is_logged_once_not_per_row(
        self, db: Database, caplog: pytest.LogCaptureFixture
    ):
        batcher = InsertBatcher(db.run, delay_s=60, max_rows=2)
        for at in range(1, 50):
            batcher.add(stats_samples, [sample(at)])
        assert batcher.dropped == 47
        assert caplog.text.count("history rows dropped") == 1
