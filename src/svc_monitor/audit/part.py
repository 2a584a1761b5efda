"""The audit domain's part: the instances' ACL LOG polled, kept and served."""

from svc_monitor.audit.api import router
from svc_monitor.audit.service import AuditService
from svc_monitor.audit.store import HISTORY_TABLES, AuditStore
from svc_monitor.parts import Part, Registry
from svc_monitor.pipe.pipe import Pipe
from svc_monitor.polling.audit_poll import AuditPoller
from svc_monitor.polling.models import PollKind
from svc_monitor.services import Services


def part(registry: Registry) -> Part:
    services = registry.get(Services)
    audit = registry.add(AuditService, AuditService(AuditStore(services.db), services.bus))

    def poll_kinds() -> list[PollKind]:
        return [AuditPoller(audit, pipe=registry.get(Pipe)).kind()]

    return Part(
        name="audit", routers=(router,), poll_kinds=poll_kinds, history_tables=HISTORY_TABLES
    )
