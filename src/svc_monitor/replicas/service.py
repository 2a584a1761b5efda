"""Membership: which svc-monitor processes share this storage, and which are alive.

Each process registers a row when it starts (an id, its address, its version, its start
time), refreshes it every REPLICA_HEARTBEAT_MS, and deletes it when it stops cleanly, so
the others see a clean leave at once. A process that dies (killed, its host gone, cut off
from storage) leaves its row behind: it reads as gone once its heartbeat is older than
REPLICA_TIMEOUT_MS, and the first replica to notice deletes it after PRUNE_AFTER_TIMEOUTS
timeouts. A replica whose row was pruned while it was silent (a long pause, a partition
from storage) puts it back on its next heartbeat: it rejoins.

Memory and SQLite storage have exactly one process (storage/sqlite_lock.py); the registry
runs there too, so `GET /api/replicas` answers the same way on every install.
"""

import asyncio
import logging
import os
import secrets
import socket
import time
from collections.abc import Callable

from sqlalchemy.exc import SQLAlchemyError

from svc_monitor import __version__
from svc_monitor.config import Settings
from svc_monitor.errors import Unavailable
from svc_monitor.replicas.models import Replica, ReplicaRecord
from svc_monitor.replicas.store import ReplicaStore

logger = logging.getLogger(__name__)

# A dead replica's row is deleted this many timeouts after its last heartbeat: long
# enough for an operator to see that it went, short enough not to pile up.
PRUNE_AFTER_TIMEOUTS = 6
ID_MAX_CHARS = 120


class ReplicaRegistry:
    def __init__(
        self,
        store: ReplicaStore,
        settings: Settings,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._store = store
        self._clock = clock
        self.heartbeat_s = settings.REPLICA_HEARTBEAT_MS / 1000
        self.timeout_ms = settings.REPLICA_TIMEOUT_MS
        host = socket.gethostname()
        # Host and pid say which process it is; the random tail keeps a restarted process
        # that got the same pid (a container's pid 1) from taking over the old row.
        self.id = f"{host}-{os.getpid()}-{secrets.token_hex(3)}"[-ID_MAX_CHARS:]
        self.address = settings.REPLICA_ADDRESS or f"http://{host}:{settings.PORT}"
        self.started_at_ms = self._now_ms()
        self.last_heartbeat_ms: int | None = None  # the last one storage took
        # How many connections this replica polls; set once the poll supervisor exists.
        self.count_polled: Callable[[], int] = lambda: 0
        self._storage_failing = False

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)

    async def run(self) -> None:
        """Register, then heartbeat until cancelled; storage failures are retried."""
        registered = False
        while True:
            try:
                registered = await self._beat(registered)
                if self._storage_failing:
                    logger.info("replica %s: heartbeats reach storage again", self.id)
                self._storage_failing = False
            except Exception as exc:  # storage down: try again on the next beat
                if not self._storage_failing:
                    logger.warning("replica %s: heartbeat failed: %s", self.id, exc)
                self._storage_failing = True
            await asyncio.sleep(self.heartbeat_s)

    async def _beat(self, registered: bool) -> bool:
        now = self._now_ms()
        polled = self.count_polled()
        if registered and await self._store.heartbeat(self.id, now, polled):
            self.last_heartbeat_ms = now
        else:
            if registered:
                logger.warning("replica %s: its row was gone (pruned as dead); rejoining", self.id)
            await self._store.register(self._record(now, polled))
            self.last_heartbeat_ms = now
        await self._store.prune(now - PRUNE_AFTER_TIMEOUTS * self.timeout_ms)
        return True

    async def leave(self) -> None:
        """Delete our row: a clean stop reads as gone to the others at once."""
        try:
            await self._store.remove(self.id)
        except Exception as exc:  # storage already down: our row times out instead
            logger.warning("replica %s: could not leave cleanly: %s", self.id, exc)

    async def list(self) -> list[Replica]:
        """Every replica with a row, oldest first; live ones have a recent heartbeat."""
        try:
            records = await self._store.list()
        except SQLAlchemyError:
            raise Unavailable("Storage did not answer: the replica list is unknown") from None
        now = self._now_ms()
        return [self._view(record, now) for record in records]

    def heartbeat_age_ms(self) -> int | None:
        """How long since storage last took our heartbeat; None before the first."""
        if self.last_heartbeat_ms is None:
            return None
        return max(0, self._now_ms() - self.last_heartbeat_ms)

    def _view(self, record: ReplicaRecord, now: int) -> Replica:
        age = max(0, now - record.heartbeat_at_ms)
        return Replica(
            record=record,
            is_self=record.id == self.id,
            heartbeat_age_ms=age,
            live=age <= self.timeout_ms,
        )

    def _record(self, now: int, polled: int) -> ReplicaRecord:
        return ReplicaRecord(
            id=self.id,
            address=self.address,
            version=__version__,
            started_at_ms=self.started_at_ms,
            heartbeat_at_ms=now,
            polled_connections=polled,
        )
