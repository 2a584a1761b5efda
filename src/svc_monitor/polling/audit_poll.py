"""One ACL LOG pass: the entries to the audit trail (which keeps each once and announces
new denials, audit/denials.py), their denial counts to the pipe (AclFacts) for Prometheus
and anomaly detection.

Skipped while the identity is unknown or lacks ACL LOG (Redis < 6, or a monitoring
user without the right).
"""

from collections import Counter

from svc_monitor.audit.service import POLL_COUNT, AuditService
from svc_monitor.config import Settings
from svc_monitor.engine.acl import AclLogEntry, parse_acl_log
from svc_monitor.events import now_ms
from svc_monitor.pipe.facts import AclFacts
from svc_monitor.pipe.pipe import Pipe
from svc_monitor.polling.models import PollKind, PollTarget
from svc_monitor.runtime_settings.schemas import RuntimeSettingsValues


class AuditPoller:
    """Feeds the audit trail from ACL LOG every `auditPollIntervalMs`."""

    def __init__(self, audit: AuditService, *, pipe: Pipe) -> None:
        self._audit = audit
        self._pipe = pipe

    async def poll(self, target: PollTarget) -> None:
        identity = target.identity
        if identity is None or not identity.capabilities.has_acl_log:
            return
        reply = await target.client.execute("ACL", "LOG", POLL_COUNT)
        captured_at = now_ms()
        entries = parse_acl_log(reply)
        connection_id = target.connection.id
        await self._pipe.put_facts(connection_id, _acl_facts(entries, captured_at))
        await self._audit.observe_log(connection_id, entries, captured_at=captured_at)

    async def forget(self, connection_id: str) -> None:
        self._audit.forget(connection_id)

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


def _audit_interval(values: RuntimeSettingsValues, _: Settings) -> int:
    return values.auditPollIntervalMs
