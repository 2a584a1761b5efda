import asyncio
import importlib
import pkgutil
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Connection, inspect, text

import svc_monitor
from svc_monitor.config import StorageType
from svc_monitor.storage.database import Database, libsql_url, postgres_url
from svc_monitor.storage.metadata import metadata
from tests.fixtures.app import make_settings, running_app, target_of
from tests.fixtures.busy_loop import busy_event_loop
from tests.fixtures.servers import RunningServer
from tests.fixtures.storage import admin_sql, pg_url

# Every table registers on the metadata when its module is imported: import them all.
for module in pkgutil.walk_packages(svc_monitor.__path__, "svc_monitor."):
    if module.name.rsplit(".", 1)[-1] in ("store", "app_meta"):
        importlib.import_module(module.name)


class TestUrls:
    @pytest.mark.parametrize(
        ("given", "expected"),
        [
            ("postgres://u:p@h:5432/db", "postgresql+asyncpg://u:p@h:5432/db"),
            ("postgresql://h/db?sslmode=require", "postgresql+asyncpg://h/db?ssl=require"),
        ],
    )
    def test_postgres_url(self, given: str, expected: str):
        assert postgres_url(given) == expected

    def test_hosted_libsql_url_is_secure(self):
        assert (
            libsql_url("libsql://db-org.turso.io") == "sqlite+libsql://db-org.turso.io?secure=true"
        )

    def test_local_file_url(self, tmp_path: Path):
        assert libsql_url(f"file:{tmp_path}/t.db") == f"sqlite+libsql:///{tmp_path}/t.db"


class TestMigrations:
    async def test_schema_matches_the_code(self, storage: dict[str, Any]):
        db = Database.from_settings(make_settings(**storage))
        try:
            await db.migrate()
            differences = await db.run(
                lambda conn: compare_metadata(MigrationContext.configure(conn), metadata)
            )
        finally:
            await db.close()
        assert differences == []

    async def test_migrating_twice_is_harmless(self, persistent_storage: dict[str, Any]):
        db = Database.from_settings(make_settings(**persistent_storage))
        try:
            await db.migrate()
            await db.migrate()
            tables = await db.run(lambda conn: set(inspect(conn).get_table_names()))
        finally:
            await db.close()
        assert {"connections", "runtime_settings", "app_meta", "alembic_version"} <= tables


class TestTurso:
    """libSQL through sqlalchemy-libsql; a local file: URL stands in for a hosted database."""

    async def test_service_runs_on_a_local_libsql_file(
        self, tmp_path: Path, valkey_server: RunningServer
    ):
        settings = make_settings(
            **target_of(valkey_server), STORAGE_TYPE="turso", STORAGE_URL=f"file:{tmp_path}/t.db"
        )
        assert settings.STORAGE_TYPE is StorageType.TURSO
        async with running_app(settings) as app:
            health = (await app.client.get("/api/health")).json()
            await app.client.put("/api/settings", json={"auditPollIntervalMs": 999})
        assert health["storage"]["type"] == "turso"
        assert health["database"]["status"] == "connected"
        async with running_app(settings) as app:
            body = (await app.client.get("/api/settings")).json()
        assert body["settings"]["auditPollIntervalMs"] == 999

    async def test_work_runs_off_the_event_loop(self, tmp_path: Path):
        import threading

        db = Database.from_settings(
            make_settings(STORAGE_TYPE="turso", STORAGE_URL=f"file:{tmp_path}/t.db")
        )
        loop_thread = threading.get_ident()

        def where(conn: Connection) -> int:
            conn.execute(text("SELECT 1"))
            return threading.get_ident()

        try:
            assert await db.run(where) != loop_thread
        finally:
            await db.close()


class TestRequestsBeforeHistory:
    @pytest.mark.parametrize("kind", [StorageType.MEMORY, StorageType.SQLITE])
    async def test_a_request_waits_only_for_the_write_in_progress(
        self, kind: StorageType, tmp_path: Path
    ):
        """History batches queue in the background; the health check's ping (or any
        request) runs before those still waiting, not after them all."""
        db = Database.open(kind, sqlite_path=tmp_path / "lanes.db")
        await db.migrate()

        def slow_batch(conn: Connection) -> None:
            time.sleep(0.3)

        try:
            batches = [asyncio.ensure_future(db.run(slow_batch, background=True)) for _ in range(5)]
            await asyncio.sleep(0.05)  # the first batch is being written
            started = time.monotonic()
            await db.ping()
            waited = time.monotonic() - started
            done_before_ping = sum(b.done() for b in batches)
            await asyncio.gather(*batches)
        finally:
            await db.close()
        assert done_before_ping <= 1
        assert waited < 0.6  # the batch in progress; behind all five it was 1.5 s


class TestBusyEventLoop:
    @pytest.mark.parametrize("kind", [StorageType.MEMORY, StorageType.SQLITE])
    async def test_storage_answers_at_once_while_the_loop_is_busy(
        self, kind: StorageType, tmp_path: Path
    ):
        """A loop always busy in short steps, as at a thousand connections: each call into
        SQLite lets go of the interpreter lock, and the storage thread must get it back.
        Without the loop's naps, one of these pings waited tens of seconds."""
        db = Database.open(kind, sqlite_path=tmp_path / "busy.db")
        await db.migrate()
        try:
            async with busy_event_loop():
                started = time.monotonic()
                async with asyncio.timeout(20):
                    for _ in range(30):
                        await db.ping()
                took = time.monotonic() - started
        finally:
            await db.close()
        assert took < 3


class TestStorageDown:
    async def test_health_503s_when_storage_is_gone(self, valkey_server: RunningServer):
        name = f"svc_test_gone_{uuid.uuid4().hex[:8]}"
        await admin_sql(f'CREATE DATABASE "{name}"')
        settings = make_settings(
            **target_of(valkey_server), STORAGE_TYPE="postgres", STORAGE_URL=pg_url(name)
        )
        try:
            async with running_app(settings) as app:
                assert (await app.client.get("/api/health")).status_code == 200
                await admin_sql(f'DROP DATABASE "{name}" WITH (FORCE)')
                response = await app.client.get("/api/health")
        finally:
            await admin_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        assert response.status_code == 503
        body = response.json()
        assert body["status"] == "error"
        assert body["storage"]["status"] == "error"
