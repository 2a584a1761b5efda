"""Feature gates: 403 naming the feature and tier on community, open on a paid tier."""

from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.routing import APIRoute

from svc_monitor.licensing.dependencies import RequireFeature
from svc_monitor.licensing.models import (
    FEATURE_TIERS,
    WEBHOOK_EVENT_TIERS,
    Feature,
    Tier,
    allowed_events,
    features_of,
    locked_events,
)
from tests.fixtures.app import AppFactory
from tests.fixtures.licensing import SigningKey

# The tiers of docs/reference/webhook-events.md, written out by hand, with the types we
# named (cve.detected free, as the
# scan; cluster.bus.corruption beside cluster.failover; the forecast, failover and data
# loss types with the detectors that raise them).
SPEC_TIERS = {
    **dict.fromkeys(
        ("instance.down", "instance.up", "memory.critical", "connection.critical"),
        Tier.COMMUNITY,
    ),
    **dict.fromkeys(("client.blocked", "cve.detected"), Tier.COMMUNITY),
    **dict.fromkeys(
        ("slowlog.threshold", "replication.lag", "cluster.failover", "cluster.bus.corruption"),
        Tier.PRO,
    ),
    **dict.fromkeys(
        ("anomaly.detected", "latency.spike", "connection.spike", "metric_forecast.limit"),
        Tier.PRO,
    ),
    **dict.fromkeys(("failover.started", "failover.completed", "data.loss.detected"), Tier.PRO),
    **dict.fromkeys(
        ("compliance.alert", "audit.policy.violation", "acl.violation", "acl.modified"),
        Tier.ENTERPRISE,
    ),
    "config.changed": Tier.ENTERPRISE,
}

PROBE = "/api/_probe/anomalies"


def add_probe(app: FastAPI) -> None:
    """A route gated like every paid route, added to the real app under test."""

    async def probe() -> dict[str, str]:
        return {"ok": "yes"}

    app.router.routes.insert(
        0,
        APIRoute(PROBE, probe, dependencies=[RequireFeature(Feature.ANOMALY_DETECTION).depends]),
    )


def gated_routes(app: FastAPI) -> list[tuple[APIRoute, Feature]]:
    found = []
    for route in app.routes:
        if not isinstance(route, APIRoute):
            continue
        for dependency in route.dependant.dependencies:
            if isinstance(dependency.call, RequireFeature):
                found.append((route, dependency.call.feature))
    return found


class TestGate:
    async def test_community_gets_403_naming_feature_and_tier(self, memory_app_factory: AppFactory):
        async with memory_app_factory() as app:
            add_probe(app.app)
            reply = await app.client.get(PROBE)
        body = reply.json()
        assert reply.status_code == 403
        assert "Anomaly detection needs the Pro or Enterprise tier" in body["message"]
        assert (body["feature"], body["requiredTier"], body["currentTier"]) == (
            "anomalyDetection",
            "pro",
            "community",
        )

    @pytest.mark.parametrize("tier", ["pro", "enterprise"])
    async def test_paid_tiers_pass(
        self, memory_app_factory: AppFactory, signing_key: SigningKey, tier: str
    ):
        async with memory_app_factory(SVC_OFFLINE_LICENSE=signing_key.mint(tier=tier)) as app:
            add_probe(app.app)
            reply = await app.client.get(PROBE)
        assert reply.status_code == 200

    async def test_every_gated_api_route_answers_403_on_community(
        self, memory_app_factory: AppFactory
    ):
        async with memory_app_factory() as app:
            add_probe(app.app)  # proves the enumeration finds gated routes
            gated = gated_routes(app.app)
            replies: list[tuple[str, Any, Feature]] = []
            for route, feature in gated:
                path = route.path.replace("{", "").replace("}", "")
                for method in sorted(route.methods or ()):
                    reply = await app.client.request(method, path)
                    replies.append((f"{method} {route.path}", reply, feature))
        assert any(name.endswith(PROBE) for name, _, _ in replies)
        for name, reply, feature in replies:
            assert reply.status_code == 403, name
            assert reply.json()["feature"] == feature.value, name
            assert feature.label in reply.json()["message"], name


class TestTierTable:
    def test_each_tier_includes_the_ones_below(self):
        assert set(features_of(Tier.COMMUNITY)) == set()
        assert set(features_of(Tier.PRO)) < set(features_of(Tier.ENTERPRISE))
        assert set(features_of(Tier.ENTERPRISE)) == set(FEATURE_TIERS)

    def test_webhook_events_have_their_documented_tiers(self):
        # Each tier's events are the table's; the documented tiers (SPEC_TIERS, above) are
        # checked type by type, so a new type adds its
        # own line to the event table, not to this test.
        for name, tier in SPEC_TIERS.items():
            assert WEBHOOK_EVENT_TIERS[name] is tier, name
        community = allowed_events(Tier.COMMUNITY)
        assert set(community) >= {n for n, t in SPEC_TIERS.items() if t is Tier.COMMUNITY}
        assert all(WEBHOOK_EVENT_TIERS[name] is Tier.COMMUNITY for name in community)
        pro_only = set(allowed_events(Tier.PRO)) - set(community)
        assert pro_only >= {n for n, t in SPEC_TIERS.items() if t is Tier.PRO}
        assert all(WEBHOOK_EVENT_TIERS[name] is Tier.PRO for name in pro_only)
        assert "cluster.bus.corruption" in locked_events(Tier.COMMUNITY)
        assert "cluster.bus.corruption" in allowed_events(Tier.PRO)
        assert allowed_events(Tier.ENTERPRISE) == list(WEBHOOK_EVENT_TIERS)
        assert locked_events(Tier.ENTERPRISE) == []

    async def test_features_endpoint_marks_locked_ones(self, memory_app_factory: AppFactory):
        async with memory_app_factory() as app:
            body = (await app.client.get("/api/license/features")).json()
        assert body["tier"] == "community"
        assert {f["id"]: f["enabled"] for f in body["features"]} == {
            f.value: False for f in FEATURE_TIERS
        }
        anomaly = next(f for f in body["features"] if f["id"] == "anomalyDetection")
        assert (anomaly["name"], anomaly["tier"]) == ("Anomaly detection", "pro")
