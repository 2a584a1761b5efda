"""The ACL audit trail (fed by the audit poll, read by the API), the denials it announces
(audit/denials.py), and the live ACL LOG."""

from typing import Any

from svc_monitor.audit.denials import Fingerprint, denied, fingerprint
from svc_monitor.audit.schemas import (
    AclLogEntryRead,
    AuditEntry,
    AuditStats,
    ReasonCount,
    TimeRange,
)
from svc_monitor.audit.store import AuditFilter, AuditStore
from svc_monitor.connections.models import CommandUnavailable, require_feature
from svc_monitor.engine.acl import AclLogEntry, parse_acl_log
from svc_monitor.engine.capabilities import EngineIdentity, is_refusal
from svc_monitor.engine.client import EngineClient
from svc_monitor.engine.errors import EngineError
from svc_monitor.errors import NotSupported, Unavailable
from svc_monitor.events import EventBus
from svc_monitor.kit.records import from_attributes

# The server keeps 128 entries by default (acllog-max-len); asking for more costs nothing.
POLL_COUNT = 128


class AuditService:
    """Stores ACL LOG entries once each, announces new denials, and answers audit queries
    per connection."""

    def __init__(self, store: AuditStore, bus: EventBus) -> None:
        self._store = store
        self._bus = bus
        self._last: dict[str, Fingerprint] = {}

    async def observe_log(
        self, connection_id: str, entries: list[AclLogEntry], *, captured_at: int
    ) -> None:
        """One ACL LOG read: keep what is new, and publish its denials after the baseline."""
        read = fingerprint(entries, captured_at)
        baseline = connection_id not in self._last
        if self._last.get(connection_id) == read:
            return
        occurred = await self.record(connection_id, entries, captured_at=captured_at)
        self._last[connection_id] = read
        if baseline:
            return
        for entry in reversed(occurred):  # oldest first, as they happened
            self._bus.publish(denied(connection_id, entry, captured_at))

    def forget(self, connection_id: str) -> None:
        # Removed or edited (maybe to another server): the next read is a new baseline.
        self._last.pop(connection_id, None)

    async def record(
        self, connection_id: str, entries: list[AclLogEntry], *, captured_at: int
    ) -> list[AclLogEntry]:
        """Keep each entry once; the entries that are new or whose count grew."""
        return await self._store.record(connection_id, entries, captured_at=captured_at)

    async def entries(
        self,
        connection_id: str,
        *,
        username: str | None = None,
        reason: str | None = None,
        since: int | None,
        until: int | None,
        limit: int,
        offset: int,
    ) -> list[AuditEntry]:
        where = AuditFilter(connection_id, username, reason, since, until)
        rows = await self._store.entries(where, limit=limit, offset=offset)
        return [
            AuditEntry(
                id=r.id,
                entryId=r.entry_id,
                count=r._mapping["count"],
                reason=r.reason,
                context=r.context,
                object=r.object,
                username=r.username,
                ageSeconds=r.age_seconds,
                clientInfo=r.client_info,
                timestampCreated=r.timestamp_created,
                timestampLastUpdated=r.timestamp_last_updated,
                capturedAt=r.captured_at,
            )
            for r in rows
        ]

    async def stats(
        self, connection_id: str, *, since: int | None, until: int | None
    ) -> AuditStats:
        where = AuditFilter(connection_id, since=since, until=until)
        totals = await self._store.totals(where)
        by_reason = await self._store.grouped(where, "reason")
        by_user = await self._store.grouped(where, "username")
        entries, events, users, earliest, latest = (
            tuple(totals) if totals is not None else (0, 0, 0, None, None)
        )
        return AuditStats(
            totalEntries=entries or 0,
            totalEvents=int(events or 0),
            uniqueUsers=users or 0,
            byReason=_counts(by_reason),
            byUser=_counts(by_user),
            timeRange=TimeRange(earliest=earliest, latest=latest) if entries else None,
        )

    async def live_log(
        self, client: EngineClient, identity: EngineIdentity | None, *, count: int
    ) -> list[AclLogEntryRead]:
        _require_acl_log(identity)
        reply = await _live(client, "ACL", "LOG", count)
        return [from_attributes(AclLogEntryRead, e) for e in parse_acl_log(reply)]

    async def reset_live_log(self, client: EngineClient, identity: EngineIdentity | None) -> None:
        """ACL LOG RESET on the server; the stored audit trail is kept."""
        _require_acl_log(identity)
        await _live(client, "ACL", "LOG", "RESET")


def _counts(rows: Any) -> dict[str, ReasonCount]:
    return {str(key): ReasonCount(entries=n, events=int(events or 0)) for key, n, events in rows}


def _require_acl_log(identity: EngineIdentity | None) -> None:
    if identity is None or identity.capabilities.has_acl_log:
        return
    if identity.release() >= (6, 0, 0):
        # Refused by a server that has ACL (renamed, disabled by the provider, denied to
        # the user): why, with its words, rather than a version requirement it meets.
        require_feature(identity, "acl_log")
    raise NotSupported(
        f"ACL LOG is not available on this {identity.type} {identity.version} "
        "(it needs version 6.0 or newer and the right to run ACL LOG)"
    )


async def _live(client: EngineClient, *args: Any) -> Any:
    try:
        return await client.execute(*args)
    except EngineError as exc:
        if is_refusal(exc):  # refused although detection found it: explained, 501
            raise CommandUnavailable(f"{args[0]} {args[1]} was refused: {exc.message}") from None
        raise Unavailable(
            f"The instance did not answer {args[0]} {args[1]}: {exc.message}"
        ) from None
