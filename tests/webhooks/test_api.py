"""The /api/webhooks resource as a client sees it: fields, defaults, ranges, scope,
masking, validation that names the field, tier gating and role rules."""

from collections.abc import AsyncIterator
from typing import Any

import pytest

from svc_monitor.licensing.models import WEBHOOK_EVENT_TIERS
from tests.fixtures.app import AppFactory, RunningApp
from tests.fixtures.licensing import SigningKey
from tests.fixtures.receiver import Receiver
from tests.fixtures.workspace import WorkspaceFactory

SECRET = "whsec-test-0123456789abcdef"


def body(target: str, **overrides: Any) -> dict[str, Any]:
    return {"name": "ops", "url": target, "events": ["instance.down"], **overrides}


@pytest.fixture
async def dev(memory_app_factory: AppFactory) -> AsyncIterator[RunningApp]:
    """Development mode: HTTP and loopback receivers are allowed."""
    async with memory_app_factory(NODE_ENV="development") as running:
        yield running


class TestCreate:
    async def test_defaults_are_the_specs(self, dev: RunningApp, receiver: Receiver) -> None:
        created = await dev.client.post("/api/webhooks", json=body(receiver.url()))
        assert created.status_code == 201, created.text
        hook = created.json()
        assert hook["enabled"] is True
        assert hook["retryPolicy"] == {
            "maxRetries": 3,
            "initialDelayMs": 1000,
            "backoffMultiplier": 2,
            "maxDelayMs": 60000,
        }
        assert hook["deliveryConfig"] == {"timeoutMs": 30000, "maxResponseBodyBytes": 10000}
        assert hook["alertConfig"] == {"hysteresisFactor": 0.9}
        assert hook["thresholds"]["memoryCriticalPercent"] == 90
        assert hook["thresholds"]["latencySpikeMs"] == 0
        assert hook["connectionId"] is None  # no X-Connection-Id: global
        assert hook["createdAt"] == hook["updatedAt"] > 1_600_000_000_000
        listed = (await dev.client.get("/api/webhooks")).json()
        assert [h["id"] for h in listed] == [hook["id"]]

    async def test_secret_is_masked_everywhere(self, dev: RunningApp, receiver: Receiver) -> None:
        headers = {"Authorization": "Bearer abcdefghijklmnop", "X-Team": "ops"}
        hook = (
            await dev.client.post(
                "/api/webhooks", json=body(receiver.url(), secret=SECRET, headers=headers)
            )
        ).json()
        assert hook["secret"] == "whse***"
        assert hook["headers"] == {"Authorization": "Bear***", "X-Team": "ops"}
        for answer in (
            await dev.client.get("/api/webhooks"),
            await dev.client.get(f"/api/webhooks/{hook['id']}"),
        ):
            assert SECRET not in answer.text
            assert "abcdefghijklmnop" not in answer.text

    async def test_x_connection_id_scopes_the_webhook(
        self, dev: RunningApp, receiver: Receiver
    ) -> None:
        connection_id = (await dev.client.get("/api/connections")).json()[0]["id"]
        scoped = await dev.client.post(
            "/api/webhooks",
            json=body(receiver.url(), name="scoped"),
            headers={"X-Connection-Id": connection_id},
        )
        assert scoped.json()["connectionId"] == connection_id
        await dev.client.post("/api/webhooks", json=body(receiver.url(), name="global"))
        for_other = await dev.client.get("/api/webhooks", headers={"X-Connection-Id": "other"})
        assert [h["name"] for h in for_other.json()] == ["global"]
        unknown = await dev.client.post(
            "/api/webhooks", json=body(receiver.url()), headers={"X-Connection-Id": "nope"}
        )
        assert unknown.status_code == 404
        assert "X-Connection-Id" in unknown.json()["message"]


class TestValidation:
    @pytest.mark.parametrize(
        ("overrides", "field"),
        [
            pytest.param({"events": ["instance.sideways"]}, "events", id="unknown-event"),
            pytest.param({"events": []}, "events", id="no-events"),
            pytest.param({"name": ""}, "name", id="empty-name"),
            pytest.param({"deliveryConfig": {"timeoutMs": 999}}, "timeoutMs", id="timeout-low"),
            pytest.param({"deliveryConfig": {"timeoutMs": 120001}}, "timeoutMs", id="timeout-high"),
            pytest.param(
                {"deliveryConfig": {"maxResponseBodyBytes": 100001}},
                "maxResponseBodyBytes",
                id="body-cap-high",
            ),
            pytest.param(
                {"alertConfig": {"hysteresisFactor": 0.49}}, "hysteresisFactor", id="factor-low"
            ),
            pytest.param(
                {"alertConfig": {"hysteresisFactor": 1.0}}, "hysteresisFactor", id="factor-high"
            ),
            pytest.param(
                {"thresholds": {"memoryCriticalPercent": 101}},
                "memoryCriticalPercent",
                id="percent-high",
            ),
            pytest.param({"retryPolicy": {"maxRetries": -1}}, "maxRetries", id="retries-neg"),
            pytest.param({"headers": {"Host": "evil"}}, "headers", id="host-header"),
            pytest.param({"headers": {"Content-Length": "1"}}, "headers", id="length-header"),
            pytest.param({"headers": {"Transfer-Encoding": "chunked"}}, "headers", id="te-header"),
            pytest.param({"headers": {"Connection": "close"}}, "headers", id="conn-header"),
            pytest.param(
                {"headers": {"X-Webhook-Signature": "forged"}}, "headers", id="our-header"
            ),
            pytest.param({"headers": {"X-A": "a\r\nB: c"}}, "headers", id="crlf-value"),
            pytest.param({"url": "ftp://example.com/"}, "url", id="ftp"),
            pytest.param({"url": "https://user:pw@example.com/"}, "url", id="userinfo"),
        ],
    )
    async def test_refused_naming_the_field(
        self,
        dev: RunningApp,
        receiver: Receiver,
        overrides: dict[str, Any],
        field: str,
    ) -> None:
        answer = await dev.client.post("/api/webhooks", json=body(receiver.url(), **overrides))
        assert answer.status_code == 422, answer.text
        assert field in answer.json()["message"]
        assert (await dev.client.get("/api/webhooks")).json() == []  # nothing stored

    async def test_http_needs_development(self, memory_app_factory: AppFactory) -> None:
        async with memory_app_factory(NODE_ENV="test") as app:
            answer = await app.client.post("/api/webhooks", json=body("http://127.0.0.1:9/x"))
        assert answer.status_code == 422
        assert "NODE_ENV=development" in answer.json()["message"]

    async def test_private_targets_are_refused_outside_production_too(
        self, dev: RunningApp
    ) -> None:
        answer = await dev.client.post("/api/webhooks", json=body("http://10.1.2.3/hook"))
        assert answer.status_code == 422
        assert "url" in answer.json()["message"]


class TestTier:
    async def test_community_refuses_paid_events_naming_them(
        self, dev: RunningApp, receiver: Receiver
    ) -> None:
        events = ["instance.down", "slowlog.threshold", "config.changed"]
        answer = await dev.client.post("/api/webhooks", json=body(receiver.url(), events=events))
        assert answer.status_code == 403
        message = answer.json()["message"]
        assert "slowlog.threshold (requires pro)" in message
        assert "config.changed (requires enterprise)" in message
        assert "instance.down" not in message
        assert (await dev.client.get("/api/webhooks")).json() == []

    async def test_enterprise_may_subscribe_to_everything(
        self, memory_app_factory: AppFactory, signing_key: SigningKey, receiver: Receiver
    ) -> None:
        token = signing_key.mint(tier="enterprise")
        async with memory_app_factory(NODE_ENV="development", SVC_OFFLINE_LICENSE=token) as app:
            allowed = (await app.client.get("/api/webhooks/allowed-events")).json()
            assert allowed["lockedEvents"] == []
            answer = await app.client.post(
                "/api/webhooks", json=body(receiver.url(), events=allowed["allowedEvents"])
            )
        assert answer.status_code == 201
        assert len(answer.json()["events"]) == len(WEBHOOK_EVENT_TIERS)


class TestUpdateAndDelete:
    async def test_partial_update_keeps_the_rest(self, dev: RunningApp, receiver: Receiver) -> None:
        hook = (
            await dev.client.post("/api/webhooks", json=body(receiver.url(), secret=SECRET))
        ).json()
        changed = await dev.client.put(
            f"/api/webhooks/{hook['id']}",
            json={"enabled": False, "thresholds": {"memoryCriticalPercent": 75}},
        )
        assert changed.status_code == 200
        updated = changed.json()
        assert updated["enabled"] is False
        assert updated["thresholds"]["memoryCriticalPercent"] == 75
        assert updated["name"] == "ops"
        assert updated["secret"] == "whse***"
        assert updated["updatedAt"] >= hook["updatedAt"]

    async def test_sending_back_the_mask_keeps_the_secret(
        self, dev: RunningApp, receiver: Receiver
    ) -> None:
        hook = (
            await dev.client.post("/api/webhooks", json=body(receiver.url(), secret=SECRET))
        ).json()
        await dev.client.put(f"/api/webhooks/{hook['id']}", json={"secret": hook["secret"]})
        await dev.client.post(f"/api/webhooks/{hook['id']}/test")
        assert receiver.requests[-1].verified(SECRET)
        cleared = await dev.client.put(f"/api/webhooks/{hook['id']}", json={"secret": None})
        assert cleared.json()["secret"] is None

    async def test_bad_update_changes_nothing(self, dev: RunningApp, receiver: Receiver) -> None:
        hook = (await dev.client.post("/api/webhooks", json=body(receiver.url()))).json()
        bad = await dev.client.put(
            f"/api/webhooks/{hook['id']}", json={"name": "new", "url": "http://10.0.0.1/"}
        )
        assert bad.status_code == 422
        assert (await dev.client.get(f"/api/webhooks/{hook['id']}")).json()["name"] == "ops"

    async def test_delete_answers_204_then_404(self, dev: RunningApp, receiver: Receiver) -> None:
        hook = (await dev.client.post("/api/webhooks", json=body(receiver.url()))).json()
        assert (await dev.client.delete(f"/api/webhooks/{hook['id']}")).status_code == 204
        assert (await dev.client.delete(f"/api/webhooks/{hook['id']}")).status_code == 404
        gone = await dev.client.get(f"/api/webhooks/{hook['id']}/deliveries")
        assert gone.status_code == 404


class TestTestCall:
    async def test_sends_a_signed_test_of_the_first_event(
        self, dev: RunningApp, receiver: Receiver
    ) -> None:
        receiver.default.body = "thanks"
        events = ["client.blocked", "instance.down"]
        hook = (
            await dev.client.post(
                "/api/webhooks", json=body(receiver.url(), secret=SECRET, events=events)
            )
        ).json()
        result = (await dev.client.post(f"/api/webhooks/{hook['id']}/test")).json()
        assert result["success"] is True
        assert result["statusCode"] == 200
        assert result["responseBody"] == "thanks"
        assert result["durationMs"] >= 0
        sent = receiver.requests[-1]
        assert sent.event == "client.blocked"
        assert sent.headers["X-Webhook-Test"] == "true"
        assert sent.json["data"]["test"] is True
        assert sent.verified(SECRET)
        history = await dev.client.get(f"/api/webhooks/{hook['id']}/deliveries")
        assert history.json() == []  # a test is not a delivery

    async def test_reports_a_receiver_error(self, dev: RunningApp, receiver: Receiver) -> None:
        receiver.default.status = 503
        hook = (await dev.client.post("/api/webhooks", json=body(receiver.url()))).json()
        result = (await dev.client.post(f"/api/webhooks/{hook['id']}/test")).json()
        assert result["success"] is False
        assert result["statusCode"] == 503


class TestRoles:
    async def test_members_read_but_cannot_change(
        self, workspace_factory: WorkspaceFactory, receiver: Receiver
    ) -> None:
        async with workspace_factory(NODE_ENV="development") as ws:
            owner = ws.owner.client
            hook = (await owner.post("/api/webhooks", json=body(receiver.url()))).json()
            member = await ws.join("Mo", "member")
            assert (await member.client.get("/api/webhooks")).status_code == 200
            for method, path in [
                ("POST", "/api/webhooks"),
                ("PUT", f"/api/webhooks/{hook['id']}"),
                ("DELETE", f"/api/webhooks/{hook['id']}"),
                ("POST", f"/api/webhooks/{hook['id']}/test"),
            ]:
                answer = await member.client.request(method, path, json=body(receiver.url()))
                assert answer.status_code == 403, (method, path)
            assert receiver.requests == []
