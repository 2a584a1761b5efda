"""Health of the service's parts: the API itself, its storage, the selected engine.

/health answers within a fixed budget whatever the monitored servers do. The engine part
is the INFO poll's last answer while it is under ANSWERED_MS old and its connection is
still open (every second at the default interval, so nearly always: no command is sent for
/health then); else a PING
waited on for at most PROBE_BUDGET_S (one that takes longer goes on in the background,
for the next answer); when it has not answered by then, what the INFO poll saw while that
is fresh, else `disconnected` with a timeout. A connection never checked
yet is the exception: its first check is waited for. Storage is its answer to the
connection's lookup, within STORAGE_BUDGET_S, and `degraded` while writes fail
(storage/failures.py). The engine part says how old its knowledge is (`checkedAt`).
While storage does not answer, the engine part is checked as usual on the connection the
last lookup found, so the answer blames storage alone.
"""

import asyncio
import time
from typing import Literal

from svc_monitor import __version__
from svc_monitor.connections.models import Connection, EngineSnapshot
from svc_monitor.connections.schemas import Capabilities
from svc_monitor.connections.service import ConnectionService
from svc_monitor.engine.errors import EngineTimeout
from svc_monitor.errors import NotFound
from svc_monitor.pipe.live_view import LiveView
from svc_monitor.storage.database import Database
from svc_monitor.system.schemas import ApiHealth, DatabaseHealth, HealthRead, StorageHealth

PROBE_BUDGET_S = 0.15
STORAGE_BUDGET_S = 1.0
# What the INFO poll saw is the answer while it is younger than this (three polls at the
# default interval): a poll that stopped succeeding is noticed within it.
POLLED_FRESH_MS = 3000
# Younger than this, the INFO poll's answer is the answer, without a PING: two passes at
# the default interval. A poll that fails marks the engine down at once, and one that
# hangs leaves its answer to age past this within two seconds.
ANSWERED_MS = 2000


class HealthService:
    """Answers /health by asking each part, each within its budget."""

    def __init__(self, db: Database, connections: ConnectionService, live: LiveView) -> None:
        self._db = db
        self._connections = connections
        self._live = live
        self._started = time.monotonic()
        # The probe in flight per connection, and when it began (monotonic).
        self._probes: dict[str, tuple[asyncio.Task[EngineSnapshot], float]] = {}
        # What the last lookup of each X-Connection-Id (None: the default) found. While
        # storage does not answer, the engine part is still asked of the server itself:
        # storage's outage is storage's, and a server that answers PING stays connected.
        self._found: dict[str | None, Connection] = {}

    async def health(self, connection_id: str | None, *, starting: bool = False) -> HealthRead:
        # The connection's lookup is storage's check too: one round trip to the storage
        # thread, not a ping beside it. On a busy service every await waits for a turn of
        # the event loop, and a probe's timeout counts them all.
        found = await self._find(connection_id)
        if isinstance(found, NotFound):
            self._found.pop(connection_id, None)
            if connection_id is not None:
                raise found  # an unknown X-Connection-Id is the caller's mistake: 404
            storage = self._storage_answered()
            database = DatabaseHealth(status="disconnected", error=found.message)
        elif isinstance(found, Exception):
            storage = self._storage_error(found)
            known = self._found.get(connection_id)
            database = await self._database(known) if known else _not_known(connection_id)
        else:
            self._found[connection_id] = found
            storage = self._storage_answered()
            database = await self._database(found)
        status: Literal["ok", "degraded", "error", "starting"] = "ok"
        if storage.status == "error":
            status = "error"
        elif starting:
            status = "starting"
        elif storage.status != "ok" or database.status != "connected":
            status = "degraded"
        return HealthRead(
            status=status,
            api=ApiHealth(
                status="ok",
                version=__version__,
                uptimeSeconds=round(time.monotonic() - self._started, 3),
            ),
            storage=storage,
            database=database,
        )

    async def close(self) -> None:
        """Cancel the probes still waiting on a server (one that hangs), before the engine
        clients close: left running, one would outlive them with its socket open."""
        tasks = [task for task, _ in self._probes.values() if not task.done()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._probes.clear()

    def _storage_answered(self) -> StorageHealth:
        writes = self._db.write_health
        return StorageHealth(
            status="ok" if writes.failing_since_ms is None else "degraded",
            type=self._db.kind.value,
            persistent=self._db.persistent,
            error=f"writes are failing: storage is {writes.reason}" if writes.reason else None,
            failingSince=writes.failing_since_ms,
        )

    def _storage_error(self, exc: Exception) -> StorageHealth:
        kind, persistent = self._db.kind.value, self._db.persistent
        error = "no answer" if isinstance(exc, TimeoutError) else type(exc).__name__
        return StorageHealth(status="error", type=kind, persistent=persistent, error=error)

    async def _find(self, connection_id: str | None) -> Connection | Exception:
        """The connection to report on, or why there is none: NotFound, or storage's own
        failure (any driver error means the same thing here).

        The budget is counted on the event loop, so a loop held up (a thousand
        connections' polls and a scrape, bench/prometheus.py) could run it out while
        storage had long answered. When it runs out, storage is asked what it did: a
        transaction that started after this lookup was handed in and has completed means
        storage answers (the storage thread takes a request's work before any other that
        was not yet running, so the lookup's own turn had come; PostgreSQL's pool answered
        another transaction begun since), and the connection the last lookup found is
        the answer. Storage that answers nothing still runs the budget out."""
        asked_ms = _now_ms()
        try:
            async with asyncio.timeout(STORAGE_BUDGET_S):
                return await self._connections.resolve(connection_id)
        except TimeoutError as exc:
            answered = self._db.last_answer_started_ms
            known = self._found.get(connection_id)
            if answered is not None and answered >= asked_ms and known is not None:
                return known
            return exc
        except Exception as exc:
            return exc

    async def _database(self, connection: Connection) -> DatabaseHealth:
        where = DatabaseHealth(
            status="disconnected",
            connectionId=connection.id,
            name=connection.name,
            host=connection.host,
            port=connection.port,
        )
        if connection.secret_error:
            return where.model_copy(update={"error": connection.secret_error})
        seen = (
            self._answered(connection)
            or await self._probe(connection)
            or self._polled(connection)
            or _no_answer()
        )
        if not seen.connected or seen.identity is None:
            error = seen.error or EngineTimeout("not detected yet")
            return where.model_copy(
                update={
                    "error": error.message,
                    "errorKind": error.kind,
                    "checkedAt": seen.checked_at_ms,
                }
            )
        identity = seen.identity
        return where.model_copy(
            update={
                "status": "connected",
                "type": identity.type,
                "version": identity.version,
                "capabilities": Capabilities(**identity.capabilities.to_api()),
                "checkedAt": seen.checked_at_ms,
            }
        )

    def _answered(self, connection: Connection) -> EngineSnapshot | None:
        """The INFO poll's answer, when under ANSWERED_MS old and its connection is still
        open: a server that went away since has closed it, and is PINGed instead."""
        if connection.pushed or not self._connections.client(connection).info_link_open:
            return None
        return self._polled(connection, within_ms=ANSWERED_MS)

    def _polled(
        self, connection: Connection, *, within_ms: int = POLLED_FRESH_MS
    ) -> EngineSnapshot | None:
        """What the INFO poll saw, while fresh: up and detected, the time of its last INFO
        (a busy service whose PING waited its turn too long is not reported down)."""
        if connection.pushed:
            return None  # the push status is the check, and costs nothing
        latest = self._live.latest(connection.id)
        seen = self._connections.last_seen(connection)
        if latest is None or seen is None or not seen.connected or seen.identity is None:
            return None
        if _now_ms() - latest.received_at_ms > within_ms:
            return None
        return EngineSnapshot(True, seen.identity, None, latest.received_at_ms)

    async def _probe(self, connection: Connection) -> EngineSnapshot | None:
        """A check of the engine, waited on for PROBE_BUDGET_S at most (None past it); one
        at a time per connection, finishing in the background when it takes longer."""
        task, began = self._probes.get(connection.id, (None, 0.0))
        if task is None or task.done():
            task = asyncio.get_running_loop().create_task(self._connections.check(connection))
            task.add_done_callback(_retrieve)
            began = time.monotonic()
            self._probes[connection.id] = (task, began)
        budget = PROBE_BUDGET_S - (time.monotonic() - began)
        if self._connections.last_seen(connection) is None:
            # Never checked (a connection just added, not yet polled): nothing to answer
            # with but its first check, bounded by the engine's own deadlines.
            return await asyncio.shield(task)
        if budget <= 0:
            return None  # a probe already past its budget: the engine has not answered
        try:
            async with asyncio.timeout(budget):
                return await asyncio.shield(task)
        except TimeoutError:
            return None


def _not_known(connection_id: str | None) -> DatabaseHealth:
    """Storage is down and this process has not looked the connection up before: which
    server to ask is in storage, so its state is not known (rather than said to be down)."""
    return DatabaseHealth(
        status="unknown",
        connectionId=connection_id,
        error="not checked: storage does not answer, and it holds which server to check",
    )


def _no_answer() -> EngineSnapshot:
    budget_ms = round(PROBE_BUDGET_S * 1000)
    error = EngineTimeout(f"no answer to PING within {budget_ms} ms")
    return EngineSnapshot(False, None, error, _now_ms())


def _retrieve(task: "asyncio.Task[EngineSnapshot]") -> None:
    if not task.cancelled():
        task.exception()  # its caller may have stopped waiting: not "never retrieved"


def _now_ms() -> int:
    return int(time.time() * 1000)
