"""History retention in cloud mode: the licence tier's window, in place of the
`retentionDays` setting and LOCAL_RETENTION_DAYS (docs/features/cloud-mode.md#retention)."""

from svc_monitor.licensing.models import Tier

CLOUD_RETENTION_DAYS: dict[Tier, int] = {Tier.COMMUNITY: 7, Tier.PRO: 90, Tier.ENTERPRISE: 365}

# "Community 7 days, Pro 90 days, Enterprise 365 days", for messages.
CLOUD_RETENTION_TEXT = ", ".join(
    f"{tier.label} {days} days" for tier, days in CLOUD_RETENTION_DAYS.items()
)
