"""One process per SQLite file: a second opener is refused with the holder named, and the
file is free again once the first has closed."""

import os
from pathlib import Path

import pytest

from svc_monitor.config import StorageType
from svc_monitor.storage.database import Database
from svc_monitor.storage.sqlite_lock import SqliteFileInUse


async def test_a_second_opener_is_refused_until_the_first_closes(tmp_path: Path) -> None:
    path = tmp_path / "one.db"
    first = Database.open(StorageType.SQLITE, sqlite_path=path)
    try:
        await first.migrate()
        with pytest.raises(SqliteFileInUse) as refused:
            Database.open(StorageType.SQLITE, sqlite_path=path)
        assert str(path) in str(refused.value)
        assert f"pid {os.getpid()}" in str(refused.value)
        await first.ping()  # the refusal did not touch the first opener's hold
    finally:
        await first.close()
    second = Database.open(StorageType.SQLITE, sqlite_path=path)
    try:
        await second.migrate()
        await second.ping()
    finally:
        await second.close()


async def test_two_files_in_one_directory_are_held_apart(tmp_path: Path) -> None:
    one = Database.open(StorageType.SQLITE, sqlite_path=tmp_path / "one.db")
    other = Database.open(StorageType.SQLITE, sqlite_path=tmp_path / "other.db")
    await one.close()
    await other.close()


async def test_memory_storage_takes_no_lock(tmp_path: Path) -> None:
    first = Database.open(StorageType.MEMORY)
    second = Database.open(StorageType.MEMORY)
    await first.close()
    await second.close()
