"""Which ACL LOG entries are denials to announce: new entries, and known ones whose count
grew, each published once as an `AclDenied` (webhooks acl.violation, client.blocked and
audit.policy.violation).

The audit trail's store decides what is new (the identity rules of audit/store.py). The
first log read of a connection is the baseline: denials already in the server's log when
we start watching are stored but not announced, since nobody wants a burst of old alerts
on start. A log identical to the previous read's (same entries with the same counts) is
not written again, so a quiet server costs one command per interval.
"""

from svc_monitor.engine.acl import AclLogEntry
from svc_monitor.event_types.access import AclDenied

Fingerprint = tuple[tuple[object, ...], ...]


def fingerprint(entries: list[AclLogEntry], captured_at: int) -> Fingerprint:
    # age-seconds moves on every read; the time it points back to (to the second) does not,
    # and tells a re-created entry on Redis < 7.2 from the one seen before.
    return tuple(
        (
            e.entry_id,
            e.timestamp_created,
            last_updated_ms(e, captured_at) // 1000,
            e.count,
            e.reason,
            e.context,
            e.object,
            e.username,
        )
        for e in entries
    )


def denied(connection_id: str, entry: AclLogEntry, captured_at: int) -> AclDenied:
    return AclDenied(
        connection_id=connection_id,
        reason=entry.reason,
        username=entry.username,
        client_info=entry.client.addr or "",
        context=entry.context,
        object=entry.object,
        count=entry.count,
        timestamp_s=last_updated_ms(entry, captured_at) // 1000,
    )


def last_updated_ms(entry: AclLogEntry, captured_at: int) -> int:
    # Redis < 7.2 has no timestamp-last-updated, only the age of the last update.
    if entry.timestamp_last_updated is not None:
        return entry.timestamp_last_updated
    return captured_at - round(entry.age_seconds * 1000)
