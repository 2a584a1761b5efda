"""The storage backend chosen by STORAGE_TYPE, behind one async interface.

postgres uses SQLAlchemy's async engine (asyncpg). The SQLite family (memory,
sqlite, and turso through libsql, whose driver is synchronous) uses the plain
engine on one dedicated thread: the loop never blocks, a SQLite connection is
never shared between threads, and start-up skips importing SQLAlchemy's asyncio
extension, which drags in the ORM (measured: +7 MB resident, +67 ms).

Stores hand `run()` a plain function of a synchronous `Connection`; it runs in one
transaction on whichever engine this is. That keeps each query written once.
"""

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from sqlalchemy import Connection, Engine, Executable, Row, create_engine, event, text
from sqlalchemy.pool import StaticPool

from svc_monitor.config import Settings, StorageType
from svc_monitor.kit.gil_handover import thread_at_work, to_thread
from svc_monitor.storage.failures import WriteHealth, outage_reason
from svc_monitor.storage.insert_batcher import InsertBatcher
from svc_monitor.storage.metadata import metadata
from svc_monitor.storage.sqlite_lock import SqliteFileLock
from svc_monitor.storage.storage_thread import StorageThread
from svc_monitor.storage.wal_checkpointer import BACKSTOP_PAGES, WalCheckpointer

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

logger = logging.getLogger(__name__)

T = TypeVar("T")


class StorageClosed(RuntimeError):
    """Work handed to a database after it closed (a task outliving shutdown)."""


class Database:
    """The service's own storage: history, connections, settings."""

    def __init__(
        self,
        kind: StorageType,
        *,
        async_engine: "AsyncEngine | None" = None,
        sync_engine: Engine | None = None,
        checkpointer: WalCheckpointer | None = None,
        file_lock: SqliteFileLock | None = None,
    ) -> None:
        self.kind = kind
        self._file_lock = file_lock
        self._async_engine = async_engine
        self._sync_engine = sync_engine
        self._checkpointer = checkpointer
        self._thread = StorageThread("svc-storage") if sync_engine is not None else None
        # History samples, written a second's worth at a time (storage/insert_batcher.py),
        # behind every request's work (storage/storage_thread.py).
        self.inserts = InsertBatcher(self._run_in_background)
        self.write_health = WriteHealth()
        # When the last transaction that completed had started (ms since the epoch), set
        # where it ran: on the storage thread, that is storage's own clock, not the event
        # loop's. /health reads it when its lookup seemed to time out (system/service.py).
        self.last_answer_started_ms: int | None = None
        self._closed = False

    @classmethod
    def from_settings(cls, settings: Settings) -> "Database":
        url = settings.STORAGE_URL.get_secret_value() if settings.STORAGE_URL else None
        token = settings.STORAGE_AUTH_TOKEN
        return cls.open(
            settings.STORAGE_TYPE,
            sqlite_path=settings.STORAGE_SQLITE_FILEPATH,
            url=url,
            auth_token=token.get_secret_value() if token else None,
        )

    @classmethod
    def open(
        cls,
        kind: StorageType,
        *,
        sqlite_path: Path | None = None,
        url: str | None = None,
        auth_token: str | None = None,
    ) -> "Database":
        """A database of `kind`: the SQLite file at `sqlite_path`, or the server at `url`."""
        if kind is StorageType.MEMORY:
            # One shared connection: every new connection to ":memory:" would be a new, empty DB.
            engine = create_engine(
                "sqlite://", poolclass=StaticPool, connect_args={"check_same_thread": False}
            )
            _sqlite_pragmas(engine, wal=False)
            return cls(kind, sync_engine=engine)
        if kind is StorageType.SQLITE:
            assert sqlite_path is not None
            path = sqlite_path.expanduser().resolve()
            path.parent.mkdir(parents=True, exist_ok=True)
            file_lock = SqliteFileLock(path)
            file_lock.acquire()  # before anything touches the file
            engine = create_engine(f"sqlite:///{path}", pool_size=1, max_overflow=0)
            _sqlite_pragmas(engine, wal=True)
            checkpointer = WalCheckpointer(path)
            checkpointer.start()
            return cls(kind, sync_engine=engine, checkpointer=checkpointer, file_lock=file_lock)
        assert url is not None  # the settings refuse to start without it
        if kind is StorageType.POSTGRES:
            from sqlalchemy.ext.asyncio import create_async_engine

            pg_engine = create_async_engine(postgres_url(url), pool_size=5, max_overflow=5)
            return cls(kind, async_engine=pg_engine)
        connect_args = {"auth_token": auth_token} if auth_token else {}
        sync_engine = create_engine(libsql_url(url), connect_args=connect_args)
        return cls(kind, sync_engine=sync_engine)

    async def run(self, work: Callable[[Connection], T], *, background: bool = False) -> T:
        """Run `work` in one transaction and return what it returns. On the storage
        thread, `background` work waits until no other work is queued. An outage (see
        failures.py) is noted for /health before it is raised.

        After `close()` it raises StorageClosed: a task still running at shutdown must not
        reopen storage (PostgreSQL's engine would open a connection nothing closes)."""
        if self._closed:
            raise StorageClosed("storage is closed")
        try:
            result = await self._transaction(work, background=background)
        except Exception as exc:
            reason = outage_reason(exc)
            if reason is not None:
                self.write_health.failed(reason, _now_ms())
            raise
        self.write_health.succeeded(_now_ms())
        return result

    async def _transaction(self, work: Callable[[Connection], T], *, background: bool) -> T:
        if self._async_engine is not None:
            started_ms = _now_ms()
            async with self._async_engine.begin() as conn:
                result = await conn.run_sync(work)
            self.last_answer_started_ms = started_ms
            return result
        assert self._sync_engine is not None
        assert self._thread is not None
        engine = self._sync_engine

        def in_thread() -> T:
            started_ms = _now_ms()
            with engine.begin() as conn:
                result = work(conn)
            self.last_answer_started_ms = started_ms  # one attribute store: atomic
            return result

        with thread_at_work():
            return await asyncio.wrap_future(self._thread.submit(in_thread, background=background))

    async def _run_in_background(self, work: Callable[[Connection], None]) -> None:
        await self.run(work, background=True)

    async def fetch_all(self, statement: Executable) -> Sequence[Row[Any]]:
        return await self.run(lambda conn: conn.execute(statement).all())

    async def fetch_one(self, statement: Executable) -> Row[Any] | None:
        return await self.run(lambda conn: conn.execute(statement).first())

    async def execute(self, statement: Executable) -> int:
        """Run one statement; the number of rows it touched."""
        return await self.run(lambda conn: conn.execute(statement).rowcount)

    @contextlib.asynccontextmanager
    async def listening(
        self, channel: str, on_message: Callable[[str], None]
    ) -> AsyncIterator[Callable[[], Awaitable[None]]]:
        """PostgreSQL only: one connection of the pool held aside, LISTENing on `channel`;
        `on_message` gets each NOTIFY's payload. Yields a check that the connection is
        still alive (a notification lost with a dropped connection is never redelivered).
        """
        if self._async_engine is None:
            raise RuntimeError("LISTEN/NOTIFY needs PostgreSQL")
        if self._closed:
            raise StorageClosed("storage is closed")

        def deliver(_conn: Any, _pid: int, _channel: str, payload: str) -> None:
            on_message(payload)

        async with self._async_engine.connect() as conn:
            raw = await conn.get_raw_connection()
            driver: Any = raw.driver_connection
            await driver.add_listener(channel, deliver)
            try:

                async def alive() -> None:
                    await driver.execute("SELECT 1")

                yield alive
            finally:
                with contextlib.suppress(Exception):  # gone with the connection anyway
                    await driver.remove_listener(channel, deliver)

    async def notify(self, channel: str, payload: str) -> None:
        """PostgreSQL only: NOTIFY `channel` (delivered to listeners once committed)."""
        await self.run(
            lambda conn: conn.execute(
                text("SELECT pg_notify(:channel, :payload)"),
                {"channel": channel, "payload": payload},
            )
        )

    async def ping(self) -> None:
        await self.run(lambda conn: conn.execute(text("SELECT 1")).scalar_one())

    async def migrate(self) -> None:
        """Bring the schema to the latest migration.

        A memory database is always new, so it is created straight from the table
        definitions (tests/storage/test_database.py keeps them equal to the migrations):
        importing Alembic costs 11 MB resident and ~180 ms of start-up.
        """
        if self.kind is StorageType.MEMORY:
            await self.run(metadata.create_all)
            return
        from svc_monitor.storage.migrate import upgrade_to_head

        await self.run(upgrade_to_head)

    @property
    def persistent(self) -> bool:
        return self.kind is not StorageType.MEMORY

    @property
    def shared(self) -> bool:
        """Whether several svc-monitor processes may use it at once (replicas): PostgreSQL
        and Turso. Memory is one process's own, a SQLite file is locked to one."""
        return self.kind in (StorageType.POSTGRES, StorageType.TURSO)

    async def close(self) -> None:
        await self.inserts.close()
        self._closed = True
        if self._async_engine is not None:
            await self._async_engine.dispose()
        if self._sync_engine is not None:
            assert self._thread is not None
            engine = self._sync_engine
            with thread_at_work():
                await asyncio.wrap_future(self._thread.submit(engine.dispose))
            await to_thread(self._thread.shutdown)
        if self._checkpointer is not None:
            await to_thread(self._checkpointer.stop)
        if self._file_lock is not None:
            self._file_lock.release()  # last: every connection to the file is closed


def _sqlite_pragmas(engine: Engine, *, wal: bool) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _: Any) -> None:
        cursor = dbapi_conn.cursor()
        cursor.execute("PRAGMA foreign_keys=ON")
        if wal:
            # WAL lets readers go on while the poller writes.
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA synchronous=NORMAL")
            # WalCheckpointer checkpoints off the write path; this is its backstop.
            cursor.execute(f"PRAGMA wal_autocheckpoint={BACKSTOP_PAGES}")
        cursor.close()


def postgres_url(url: str) -> str:
    """postgres://, postgresql:// or postgresql+asyncpg:// as asyncpg's SQLAlchemy URL."""
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query))
    # libpq's sslmode is asyncpg's ssl.
    if "sslmode" in query:
        query["ssl"] = query.pop("sslmode")
    return urlunsplit(parts._replace(scheme="postgresql+asyncpg", query=urlencode(query)))


def libsql_url(url: str) -> str:
    """A turso/libSQL URL as the sqlalchemy-libsql dialect's URL."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme == "file":
        # file:relative.db, file:///abs.db and file:/abs.db all name a local file.
        path = Path(parts.netloc + parts.path).expanduser().resolve()
        path.parent.mkdir(parents=True, exist_ok=True)
        return f"sqlite+libsql:///{path}"
    secure = scheme in ("libsql", "https", "wss")
    query = dict(parse_qsl(parts.query))
    if secure:
        query["secure"] = "true"
    return urlunsplit(("sqlite+libsql", parts.netloc, parts.path, urlencode(query), ""))


def _now_ms() -> int:
    return int(time.time() * 1000)
