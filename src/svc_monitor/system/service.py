"""Health of the service's parts: the API itself, its storage, the selected engine."""

import time
from typing import Literal

from svc_monitor import __version__
from svc_monitor.connections.models import Connection
from svc_monitor.connections.schemas import Capabilities
from svc_monitor.connections.service import ConnectionService
from svc_monitor.errors import NotFound
from svc_monitor.storage.database import Database
from svc_monitor.system.schemas import ApiHealth, DatabaseHealth, HealthRead, StorageHealth


class HealthService:
    """Answers /health by asking each part, with every engine call under its deadline."""

    def __init__(self, db: Database, connections: ConnectionService) -> None:
        self._db = db
        self._connections = connections
        self._started = time.monotonic()

    async def health(self, connection_id: str | None) -> HealthRead:
        # The connection's lookup is storage's check too: one round trip to the storage
        # thread, not a ping beside it. On a busy service every await waits for a turn of
        # the event loop, and a probe's timeout counts them all.
        found = await self._find(connection_id)
        if isinstance(found, NotFound):
            if connection_id is not None:
                raise found  # an unknown X-Connection-Id is the caller's mistake: 404
            storage = self._storage_ok()
            database = DatabaseHealth(status="disconnected", error=found.message)
        elif isinstance(found, Exception):
            storage = self._storage_error(found)
            database = DatabaseHealth(status="disconnected", error="storage is unavailable")
        else:
            storage = self._storage_ok()
            database = await self._database(found)
        status: Literal["ok", "degraded", "error"] = "ok"
        if storage.status != "ok":
            status = "error"
        elif database.status != "connected":
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

    def _storage_ok(self) -> StorageHealth:
        return StorageHealth(status="ok", type=self._db.kind.value, persistent=self._db.persistent)

    def _storage_error(self, exc: Exception) -> StorageHealth:
        kind, persistent = self._db.kind.value, self._db.persistent
        return StorageHealth(
            status="error", type=kind, persistent=persistent, error=type(exc).__name__
        )

    async def _find(self, connection_id: str | None) -> Connection | Exception:
        """The connection to report on, or why there is none: NotFound, or storage's own
        failure (any driver error means the same thing here)."""
        try:
            return await self._connections.resolve(connection_id)
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
        seen = await self._connections.check(connection)
        if not seen.connected or seen.identity is None:
            assert seen.error is not None
            return where.model_copy(
                update={"error": seen.error.message, "errorKind": seen.error.kind}
            )
        identity = seen.identity
        return where.model_copy(
            update={
                "status": "connected",
                "type": identity.type,
                "version": identity.version,
                "capabilities": Capabilities(**identity.capabilities.to_api()),
            }
        )
