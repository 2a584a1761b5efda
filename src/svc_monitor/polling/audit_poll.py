"""One ACL LOG pass: keep each entry once in the audit trail and publish each new denial.

Skipped while the identity is unknown or lacks ACL LOG (Redis < 6, or a monitoring
user without the right). A log identical to the previous pass's (same entries with the
same counts) is not written again, so a quiet server costs one command per interval.

Every entry the audit trail had not seen, or whose count grew, is published as an
`AclDenied` (the store decides, with the identity rules of audit/store.py). The first pass
on a connection is the baseline: denials already in the server's log when we start
watching are stored but not announced, since nobody wants a burst of old alerts on start.

Every pass also leaves the log's denial counts in live state (AclFacts) for Prometheus.
"""

from collections import Counter

from svc_monitor.audit.service import POLL_COUNT, AuditService
from svc_monitor.config import Settings
from svc_monitor.engine.acl import AclLogEntry, parse_acl_log
from svc_monitor.events import AclDenied, EventBus, now_ms
from svc_monitor.pipe.facts import AclFacts
from svc_monitor.pipe.live_state import LiveState
from svc_monitor.polling.models import PollKind, PollTarget
from svc_monitor.runtime_settings.schemas import RuntimeSettingsValues

_Fingerprint = tuple[tuple[object, ...], ...]


class AuditPoller:
    """Feeds the audit trail from ACL LOG every `auditPollIntervalMs` and publishes denials."""

    def __init__(self, audit: AuditService, bus: EventBus, *, live_state: LiveState) -> None:
        self._audit = audit
        self._bus = bus
        self._live_state = live_state
        self._last: dict[str, _Fingerprint] = {}

    async def poll(self, target: PollTarget) -> None:
        identity = target.identity
        if identity is None or not identity.capabilities.has_acl_log:
            return
        reply = await target.client.execute("ACL", "LOG", POLL_COUNT)
        captured_at = now_ms()
        entries = parse_acl_log(reply)
        connection_id = target.connection.id
        self._live_state.put(connection_id, _acl_facts(entries, captured_at))
        fingerprint = _fingerprint(entries, captured_at)
        baseline = connection_id not in self._last
        if self._last.get(connection_id) == fingerprint:
            return
        occurred = await self._audit.record(connection_id, entries, captured_at=captured_at)
        self._last[connection_id] = fingerprint
        if baseline:
            return
        for entry in reversed(occurred):  # oldest first, as they happened
            self._bus.publish(_denied(connection_id, entry, captured_at))

    async def forget(self, connection_id: str) -> None:
        # Removed or edited (maybe to another server): the next pass is a new baseline.
        self._last.pop(connection_id, None)

    def kind(self) -> PollKind:
        return PollKind(
            name="audit", interval_ms=_audit_interval, poll=self.poll, forget=self.forget
        )


def _acl_facts(entries: list[AclLogEntry], captured_at: int) -> AclFacts:
    by_reason: Counter[str] = Counter()
    by_user: Counter[str] = Counter()
    for entry in entries:
        by_reason[entry.reason] += entry.count
        by_user[entry.username] += entry.count
    return AclFacts(
        at_ms=captured_at,
        denied=sum(by_reason.values()),
        by_reason=dict(by_reason),
        by_user=dict(by_user),
    )


def _denied(connection_id: str, entry: AclLogEntry, captured_at: int) -> AclDenied:
    return AclDenied(
        connection_id=connection_id,
        reason=entry.reason,
        username=entry.username,
        client_info=entry.client.addr or "",
        context=entry.context,
        object=entry.object,
        count=entry.count,
        timestamp_s=_last_updated_ms(entry, captured_at) // 1000,
    )


def _last_updated_ms(entry: AclLogEntry, captured_at: int) -> int:
    # Redis < 7.2 has no timestamp-last-updated, only the age of the last update.
    if entry.timestamp_last_updated is not None:
        return entry.timestamp_last_updated
    return captured_at - round(entry.age_seconds * 1000)


def _fingerprint(entries: list[AclLogEntry], captured_at: int) -> _Fingerprint:
    # age-seconds moves on every read; the time it points back to (to the second) does not,
    # and tells a re-created entry on Redis < 7.2 from the one seen before.
    return tuple(
        (
            e.entry_id,
            e.timestamp_created,
            _last_updated_ms(e, captured_at) // 1000,
            e.count,
            e.reason,
            e.context,
            e.object,
            e.username,
        )
        for e in entries
    )


def _audit_interval(values: RuntimeSettingsValues, _: Settings) -> int:
    return values.auditPollIntervalMs
