"""The three tiers and the one table that says which tier unlocks which feature.

Every gate in the service (API routes, webhook event subscriptions, UI locks) asks
this module; nothing else compares tiers. Each tier includes everything below it.
"""

from enum import StrEnum


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
    Feature.WEBHOOK_OPERATIONAL_EVENTS: Tier.PRO,
    Feature.WEBHOOK_COMPLIANCE_EVENTS: Tier.ENTERPRISE,
}

_TITLES: dict[Feature, str] = {
    Feature.ANOMALY_DETECTION: "Anomaly detection",
    Feature.KEY_ANALYTICS: "Key analytics",
    Feature.WEBHOOK_OPERATIONAL_EVENTS: "Operational webhook events",
    Feature.WEBHOOK_COMPLIANCE_EVENTS: "Compliance and ACL webhook events",
}

# Webhook event types by the tier that may subscribe to them (webhooks spec, "Tier gating").
WEBHOOK_EVENT_TIERS: dict[str, Tier] = {
    "instance.down": Tier.COMMUNITY,
    "instance.up": Tier.COMMUNITY,
    "memory.critical": Tier.COMMUNITY,
    "connection.critical": Tier.COMMUNITY,
    "client.blocked": Tier.COMMUNITY,
    "slowlog.threshold": Tier.PRO,
    "replication.lag": Tier.PRO,
    "cluster.failover": Tier.PRO,
    # Named by us (the spec leaves it open), in the style of the others: lowercase words
    # joined by dots, no underscores (audit.policy.violation), under cluster.*.
    "cluster.bus.corruption": Tier.PRO,
    "anomaly.detected": Tier.PRO,
    "latency.spike": Tier.PRO,
    "connection.spike": Tier.PRO,
    # capacity forecasting (forecast/): a metric's projected time to its ceiling fell
    # under its alert threshold
    "metric_forecast.limit": Tier.PRO,
    # anomaly detection's rule detectors (anomaly/detectors.py): a role change, and a
    # primary restarted empty or a replica wiped
    "failover.started": Tier.PRO,
    "failover.completed": Tier.PRO,
    "data.loss.detected": Tier.PRO,
    # Named by us, like cluster.bus.corruption (anomaly.detected's shape). Community: CVE
    # scanning is free on every tier, and being told a server is exploitable must not be
    # a paid extra.
    "cve.detected": Tier.COMMUNITY,
    "compliance.alert": Tier.ENTERPRISE,
    "audit.policy.violation": Tier.ENTERPRISE,
    "acl.violation": Tier.ENTERPRISE,
    "acl.modified": Tier.ENTERPRISE,
    "config.changed": Tier.ENTERPRISE,
}


def features_of(tier: Tier) -> list[Feature]:
    return [feature for feature, needs in FEATURE_TIERS.items() if tier.includes(needs)]


def allowed_events(tier: Tier) -> list[str]:
    return [event for event, needs in WEBHOOK_EVENT_TIERS.items() if tier.includes(needs)]


def locked_events(tier: Tier) -> list[str]:
    return [event for event, needs in WEBHOOK_EVENT_TIERS.items() if not tier.includes(needs)]
