"""The webhooks' feature-phase part: delivery history retention (the service is core)."""

from svc_monitor.parts import Part, Registry
from svc_monitor.webhooks.store import HISTORY_TABLES


def part(registry: Registry) -> Part:
    return Part(name="webhooks", history_tables=HISTORY_TABLES)
