"""The activity log: who changed what, signed in or out, or ran a CLI command.

Entries are only ever added (and pruned after ACTIVITY_RETENTION_DAYS); no route edits
or deletes them. Refused requests (401/403) are not recorded: the log keeps to what
actually happened (docs/features/users-and-access.md#activity-log).
"""

import logging
import time
from collections.abc import Callable

from svc_monitor.auth.models import ActivityEntry
from svc_monitor.auth.store import AuthStore

logger = logging.getLogger(__name__)

MAX_PAGE = 100
DAY_MS = 24 * 3600 * 1000


class ActivityLog:
    def __init__(
        self, store: AuthStore, *, retention_days: int, clock: Callable[[], float] = time.time
    ) -> None:
        self._store = store
        self._retention_ms = retention_days * DAY_MS
        self._clock = clock

    async def record(
        self,
        action: str,
        *,
        actor_id: str | None,
        actor_name: str | None,
        source_ip: str | None = None,
        connection_id: str | None = None,
        route: str | None = None,
        status: int | None = None,
        object_id: str | None = None,
        details: dict[str, object] | None = None,
    ) -> None:
        await self._store.add_activity(
            ActivityEntry(
                id=0,
                at=int(self._clock() * 1000),
                actor_id=actor_id,
                actor_name=actor_name,
                action=action[:200],
                source_ip=source_ip,
                connection_id=connection_id[:64] if connection_id else None,
                route=route,
                status=status,
                object_id=object_id[:200] if object_id else None,
                details=details or {},
            )
        )

    async def page(
        self,
        *,
        actor: str | None = None,
        action: str | None = None,
        since: int | None = None,
        until: int | None = None,
        cursor: int | None = None,
        limit: int = 50,
    ) -> tuple[list[ActivityEntry], int | None]:
        """Newest first, and the cursor of the next page (None on the last)."""
        entries = await self._store.activity(
            actor=actor,
            action=action,
            since=since,
            until=until,
            before_id=cursor,
            limit=limit + 1,
        )
        more = len(entries) > limit
        entries = entries[:limit]
        return entries, (entries[-1].id if more and entries else None)

    async def prune(self) -> int:
        pruned = await self._store.prune_activity(
            older_than=int(self._clock() * 1000) - self._retention_ms
        )
        if pruned:
            logger.info("activity log: pruned %d entries past retention", pruned)
        return pruned
