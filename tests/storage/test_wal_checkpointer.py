"""The SQLite file catches up with its write-ahead log while the service runs."""

import asyncio
import shutil
import sqlite3
import threading
from pathlib import Path

from sqlalchemy import Connection, text

from svc_monitor.config import StorageType
from svc_monitor.storage.database import Database


def rows_in_file_alone(database: Path, copy: Path) -> int:
    """Rows of `t` in the database file without its WAL: what a plain file copy holds."""
    shutil.copyfile(database, copy)
    with sqlite3.connect(copy) as conn:
        try:
            (count,) = conn.execute("SELECT count(*) FROM t").fetchone()
        except sqlite3.OperationalError:  # the table itself is still only in the WAL
            return 0
    return int(count)


def wal_bytes(database: Path) -> int:
    return Path(f"{database}-wal").stat().st_size


def checkpointer_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "svc-wal-checkpoint"]


async def test_committed_rows_reach_the_database_file_without_a_large_wal(tmp_path: Path):
    database = tmp_path / "svc.db"
    before = set(checkpointer_threads())
    db = Database.open(StorageType.SQLITE, sqlite_path=database)
    ours = set(checkpointer_threads()) - before
    assert len(ours) == 1
    try:

        def write(conn: Connection) -> None:
            conn.execute(text("CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, v TEXT)"))
            conn.execute(text("INSERT INTO t (v) VALUES (:v)"), [{"v": "x" * 200}] * 500)

        for _ in range(4):
            await db.run(write)
        assert wal_bytes(database) > 0  # the writes went to the WAL
        # SQLite's own automatic checkpoint waits for 1,000 pages; these are ~100.
        in_file = 0
        for _ in range(50):  # bounded: 5 s, the checkpointer runs every second
            in_file = rows_in_file_alone(database, tmp_path / "copy.db")
            if in_file == 2_000:
                break
            await asyncio.sleep(0.1)
        assert in_file == 2_000
    finally:
        await db.close()
    assert not any(thread.is_alive() for thread in ours)  # closing stops it


async def test_memory_storage_has_no_checkpointer():
    before = set(checkpointer_threads())
    db = Database.open(StorageType.MEMORY)
    try:
        assert set(checkpointer_threads()) == before
    finally:
        await db.close()
