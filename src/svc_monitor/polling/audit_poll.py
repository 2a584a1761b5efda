"""One ACL LOG pass: read the server's log and keep each entry once in the audit trail.

Skipped while the identity is unknown or lacks ACL LOG (Redis < 6, or a monitoring
user without the right). A log identical to the previous pass's (same entries with the
same counts) is not written again, so a quiet server costs one command per interval.
"""

from svc_monitor.audit.service import POLL_COUNT, AuditService
from svc_monitor.config import Settings
from svc_monitor.engine.acl import AclLogEntry, parse_acl_log
from svc_monitor.events import now_ms
from svc_monitor.polling.models import PollKind, PollTarget
from svc_monitor.runtime_settings.schemas import RuntimeSettingsValues

_Fingerprint = tuple[tuple[object, ...], ...]


class AuditPoller:
    """Feeds the audit trail from ACL LOG every `auditPollIntervalMs`."""

    def __init__(self, audit: AuditService) -> None:
        self._audit = audit
        self._last: dict[str, _Fingerprint] = {}

    async def poll(self, target: PollTarget) -> None:
        identity = target.identity
        if identity is None or not identity.capabilities.has_acl_log:
            return
        reply = await target.client.execute("ACL", "LOG", POLL_COUNT)
        captured_at = now_ms()
        entries = parse_acl_log(reply)
        fingerprint = _fingerprint(entries, captured_at)
        connection_id = target.connection.id
        if self._last.get(connection_id) == fingerprint:
            return
        await self._audit.record(connection_id, entries, captured_at=captured_at)
        self._last[connection_id] = fingerprint

    def kind(self) -> PollKind:
        return PollKind(name="audit", interval_ms=_audit_interval, poll=self.poll)


def _fingerprint(entries: list[AclLogEntry], captured_at: int) -> _Fingerprint:
    # age-seconds moves on every read; the time it points back to (to the second) does not,
    # and tells a re-created entry on Redis < 7.2 from the one seen before.
    return tuple(
        (
            e.entry_id,
            e.timestamp_created,
            e.timestamp_last_updated or (captured_at - round(e.age_seconds * 1000)) // 1000,
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
