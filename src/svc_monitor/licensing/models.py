"""The three tiers and the one table that says which tier unlocks which feature.

Every gate in the service (API routes, webhook event subscriptions, UI locks) asks
this module; nothing else compares tiers. Each tier includes everything below it.
"""

from enum import StrEnum

from svc_monitor.event_types.table import EVENT_TYPES


class Tier(StrEnum):
    COMMUNITY = "community"
    PRO = "pro"
    ENTERPRISE = "enterprise"

    @property
    def rank(self) -> int:
        return _RANK[self]

    @property
    def label(self) -> str:
        return self.value.capitalize()

    def includes(self, other: "Tier") -> bool:
        return self.rank >= other.rank


_RANK = {Tier.COMMUNITY: 0, Tier.PRO: 1, Tier.ENTERPRISE: 2}


class Feature(StrEnum):
    """Paid features; anything not listed here is free for everyone."""

    ANOMALY_DETECTION = "anomalyDetection"
    KEY_ANALYTICS = "keyAnalytics"
    SEARCH_SLA = "searchSla"
    MIGRATION_EXECUTION = "migrationExecution"
    WEBHOOK_OPERATIONAL_EVENTS = "webhookOperationalEvents"
    WEBHOOK_COMPLIANCE_EVENTS = "webhookComplianceEvents"

    @property
    def tier(self) -> Tier:
        return FEATURE_TIERS[self]

    @property
    def label(self) -> str:
        return _TITLES[self]


FEATURE_TIERS: dict[Feature, Tier] = {
    Feature.ANOMALY_DETECTION: Tier.PRO,
    Feature.KEY_ANALYTICS: Tier.PRO,
    Feature.SEARCH_SLA: Tier.PRO,
    Feature.MIGRATION_EXECUTION: Tier.PRO,
    Feature.WEBHOOK_OPERATIONAL_EVENTS: Tier.PRO,
    Feature.WEBHOOK_COMPLIANCE_EVENTS: Tier.ENTERPRISE,
}

_TITLES: dict[Feature, str] = {
    Feature.ANOMALY_DETECTION: "Anomaly detection",
    Feature.KEY_ANALYTICS: "Key analytics",
    Feature.SEARCH_SLA: "Search latency SLA",
    Feature.MIGRATION_EXECUTION: "Migration execution and validation",
    Feature.WEBHOOK_OPERATIONAL_EVENTS: "Operational webhook events",
    Feature.WEBHOOK_COMPLIANCE_EVENTS: "Compliance and ACL webhook events",
}

# Webhook event types by the lowest tier that may subscribe to them
# (docs/reference/webhook-events.md), in list order; each type declares its tier in
# event_types/.
WEBHOOK_EVENT_TIERS: dict[str, Tier] = {e.name: Tier(e.tier) for e in EVENT_TYPES}


def features_of(tier: Tier) -> list[Feature]:
    return [feature for feature, needs in FEATURE_TIERS.items() if tier.includes(needs)]


def allowed_events(tier: Tier) -> list[str]:
    return [event for event, needs in WEBHOOK_EVENT_TIERS.items() if tier.includes(needs)]


def locked_events(tier: Tier) -> list[str]:
    return [event for event, needs in WEBHOOK_EVENT_TIERS.items() if not tier.includes(needs)]
