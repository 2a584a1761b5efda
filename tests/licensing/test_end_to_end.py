"""The licence's whole path over loopback: entitlement server, monitor, files, time."""

import asyncio
import stat
from pathlib import Path

import httpx

from svc_monitor.licensing.models import Tier, locked_events
from svc_monitor.licensing.service import LicenseService
from tests.fixtures.app import fresh_data_dir, make_settings, running_app
from tests.fixtures.licensing import (
    ADMIN_TOKEN,
    EntitlementServerFactory,
    FakeClock,
    RecordingServer,
)

PRO_EVENTS = {"slowlog.threshold", "replication.lag", "cluster.failover", "anomaly.detected"}
ENTERPRISE_EVENTS = {
    "compliance.alert", "audit.policy.violation", "acl.violation", "acl.modified", "config.changed"
}  # fmt: skip


async def mint_key(url: str, tier: str) -> dict[str, str]:
    async with httpx.AsyncClient() as client:
        reply = await client.post(
            f"{url}/admin/licenses",
            json={"tier": tier, "customer": {"name": "Acme", "email": "ops@acme.test"}},
            headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
        )
    assert reply.status_code == 201
    created: dict[str, str] = reply.json()
    return created


async def offline_file_of(entitlement_server: EntitlementServerFactory, tier: str) -> bytes:
    """A licence of `tier` and its offline file, from the admin route."""
    async with entitlement_server() as server, httpx.AsyncClient() as client:
        licence = await mint_key(server.url, tier)
        reply = await client.post(
            f"{server.url}/admin/licenses/{licence['id']}/offline-file",
            headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
        )
    assert reply.status_code == 200
    return reply.content


class TestOnlineLicence:
    async def test_pro_online_then_outage_grace_then_community(
        self, entitlement_server: EntitlementServerFactory
    ):
        clock = FakeClock()
        data_dir = Path(fresh_data_dir())
        server_running = entitlement_server(clock=clock)
        server = await server_running.__aenter__()
        try:
            licence = await mint_key(server.url, "pro")
            settings = make_settings(
                STORAGE_TYPE="memory",
                SVC_DATA_DIR=data_dir,
                SVC_LICENSE_KEY=licence["key"],
                ENTITLEMENT_URL=server.url,
            )
            async with running_app(settings, clock=clock) as app:
                await app.client.post("/api/license/refresh")
                status = (await app.client.get("/api/license/status")).json()
                events = (await app.client.get("/api/webhooks/allowed-events")).json()
                # The entitlement server goes away; the monitor keeps running.
                await server_running.__aexit__(None, None, None)
                clock.advance(days=3)
                after_3_days = (await app.client.post("/api/license/refresh")).json()
                pro_events = (await app.client.get("/api/webhooks/allowed-events")).json()
                clock.advance(days=4, hours=1)  # 7 days and an hour since the last good check
                after_7_days = (await app.client.post("/api/license/refresh")).json()
                community_events = (await app.client.get("/api/webhooks/allowed-events")).json()
        finally:
            await server_running.__aexit__(None, None, None)
        assert status["tier"] == "pro"
        assert status["source"] == "online"
        assert status["mode"] == "online"
        assert status["licenseId"] == licence["id"]
        assert set(events["allowedEvents"]) >= PRO_EVENTS
        assert events["lockedEvents"] == locked_events(Tier.PRO)  # the enterprise ones
        assert set(events["lockedEvents"]) >= ENTERPRISE_EVENTS
        persisted = data_dir / "license.jwt"
        assert stat.S_IMODE(persisted.stat().st_mode) == 0o600
        assert licence["key"] not in persisted.read_text()
        assert after_3_days["tier"] == "pro"
        assert after_3_days["source"] == "persisted"
        assert any("did not answer" in w["message"] for w in after_3_days["warnings"])
        assert set(pro_events["allowedEvents"]) >= PRO_EVENTS
        assert after_7_days["tier"] == "community"
        assert after_7_days["source"] == "community"
        assert not PRO_EVENTS & set(community_events["allowedEvents"])

    async def test_a_restart_during_an_outage_starts_with_the_persisted_tier(
        self, entitlement_server: EntitlementServerFactory
    ):
        data_dir = fresh_data_dir()
        async with entitlement_server() as server:
            licence = await mint_key(server.url, "pro")
            online = make_settings(
                STORAGE_TYPE="memory",
                SVC_DATA_DIR=data_dir,
                SVC_LICENSE_KEY=licence["key"],
                ENTITLEMENT_URL=server.url,
            )
            async with running_app(online) as app:
                await app.client.post("/api/license/refresh")
        outage = make_settings(
            STORAGE_TYPE="memory",
            SVC_DATA_DIR=data_dir,
            SVC_LICENSE_KEY=licence["key"],
            ENTITLEMENT_URL="http://127.0.0.1:9",
        )
        # Before any online attempt, from disk alone:
        on_disk = LicenseService(outage)
        on_disk.start()
        async with running_app(outage) as app:
            first = (await app.client.get("/api/license/status")).json()
        other_key = make_settings(
            STORAGE_TYPE="memory", SVC_DATA_DIR=data_dir, SVC_LICENSE_KEY="svc_another_key"
        )
        async with running_app(other_key) as app:
            another = (await app.client.get("/api/license/status")).json()
        assert (on_disk.tier.value, on_disk.entitlement().source.value) == ("pro", "persisted")
        assert (first["tier"], first["source"]) == ("pro", "persisted")
        assert another["tier"] == "community"  # the persisted token belongs to the old key

    async def test_within_the_cache_ttl_an_outage_keeps_the_cached_answer(
        self, entitlement_server: EntitlementServerFactory
    ):
        clock = FakeClock()
        server_running = entitlement_server(clock=clock)
        server = await server_running.__aenter__()
        try:
            licence = await mint_key(server.url, "enterprise")
            settings = make_settings(
                STORAGE_TYPE="memory", SVC_LICENSE_KEY=licence["key"], ENTITLEMENT_URL=server.url
            )
            async with running_app(settings, clock=clock) as app:
                await app.client.post("/api/license/refresh")
                await server_running.__aexit__(None, None, None)
                clock.advance(hours=0.5)
                cached = (await app.client.post("/api/license/refresh")).json()
                clock.advance(hours=1)
                persisted = (await app.client.post("/api/license/refresh")).json()
        finally:
            await server_running.__aexit__(None, None, None)
        assert (cached["tier"], cached["source"]) == ("enterprise", "cached")
        assert (persisted["tier"], persisted["source"]) == ("enterprise", "persisted")

    async def test_a_revoked_key_drops_to_community_at_the_next_check(
        self, entitlement_server: EntitlementServerFactory
    ):
        async with entitlement_server() as server, httpx.AsyncClient() as client:
            licence = await mint_key(server.url, "pro")
            settings = make_settings(
                STORAGE_TYPE="memory", SVC_LICENSE_KEY=licence["key"], ENTITLEMENT_URL=server.url
            )
            async with running_app(settings) as app:
                before = (await app.client.post("/api/license/refresh")).json()
                await client.patch(
                    f"{server.url}/admin/licenses/{licence['id']}",
                    json={"status": "cancelled"},
                    headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
                )
                after = (await app.client.post("/api/license/refresh")).json()
        assert before["tier"] == "pro"
        assert after["tier"] == "community"
        assert any("cancelled" in w["message"] for w in after["warnings"])

    async def test_unsigned_paid_grant_is_refused_unless_allowed(
        self, recording_server: RecordingServer
    ):
        recording_server.reply = {"tier": "pro"}
        base = {
            "STORAGE_TYPE": "memory",
            "SVC_LICENSE_KEY": "svc_k",
            "ENTITLEMENT_URL": recording_server.url,
        }
        async with running_app(make_settings(**base)) as app:
            refused = (await app.client.post("/api/license/refresh")).json()
        async with running_app(make_settings(**base, LICENSE_ALLOW_UNSIGNED=True)) as app:
            allowed = (await app.client.post("/api/license/refresh")).json()
        assert refused["tier"] == "community"
        assert any("LICENSE_ALLOW_UNSIGNED" in w["message"] for w in refused["warnings"])
        assert (allowed["tier"], allowed["signed"]) == ("pro", False)
        check = next(h for h in recording_server.hits if h.path == "/v1/entitlements")
        assert check.method == "POST"
        assert check.body["licenseKey"] == "svc_k"


class TestAirGapped:
    async def test_offline_file_activates_enterprise_without_any_request(
        self, entitlement_server: EntitlementServerFactory, recording_server: RecordingServer
    ):
        offline_file = await offline_file_of(entitlement_server, "enterprise")
        # Every outbound URL points at a server that records what reaches it.
        settings = make_settings(
            STORAGE_TYPE="memory",
            ENTITLEMENT_URL=recording_server.url,
            RELEASES_URL=recording_server.url + "/releases",
            SVC_TELEMETRY=True,
        )
        async with running_app(settings) as app:
            before = (await app.client.get("/api/license/status")).json()
            activated = await app.client.put(
                "/api/license/offline",
                files={"file": ("license-offline.jwt", offline_file, "application/jwt")},
            )
            recording_server.hits.clear()  # before activation it was not air-gapped
            services = app.services
            await services.license.refresh()
            assert not await services.versions.check_once()
            assert not await services.telemetry.send_once()
            status = (await app.client.get("/api/license/status")).json()
            version = (await app.client.get("/api/version")).json()
            events = (await app.client.get("/api/webhooks/allowed-events")).json()
        assert before["tier"] == "community"
        assert activated.status_code == 200, activated.text
        assert status["tier"] == "enterprise"
        assert status["source"] == "offline"
        assert status["mode"] == "offline"
        assert status["airGapped"] is True
        assert status["telemetryEnabled"] is False
        assert status["instanceLimit"] == 1
        assert version["airGapped"] is True
        assert events["lockedEvents"] == []
        assert recording_server.hits == []

    async def test_a_monitor_started_air_gapped_never_sends_anything(
        self, entitlement_server: EntitlementServerFactory, recording_server: RecordingServer
    ):
        data_dir = Path(fresh_data_dir())
        offline_file = await offline_file_of(entitlement_server, "pro")
        (data_dir / "license-offline.jwt").write_bytes(offline_file)
        settings = make_settings(
            STORAGE_TYPE="memory",
            SVC_DATA_DIR=data_dir,
            ENTITLEMENT_URL=recording_server.url,
            RELEASES_URL=recording_server.url + "/releases",
        )
        async with running_app(settings) as app:
            status = (await app.client.get("/api/license/status")).json()
            await asyncio.sleep(0.5)  # the background loops (licence, version) have run
            await app.services.license.refresh()
            await app.services.versions.check_once()
            await app.services.telemetry.send_once()
        assert (status["tier"], status["airGapped"]) == ("pro", True)
        assert recording_server.hits == []

    async def test_without_a_licence_the_monitor_does_ask(self, recording_server: RecordingServer):
        """The other half of the proof: the same recorder sees requests when not air-gapped."""
        settings = make_settings(
            STORAGE_TYPE="memory",
            ENTITLEMENT_URL=recording_server.url,
            RELEASES_URL=recording_server.url + "/releases",
        )
        async with running_app(settings) as app:
            await app.services.versions.check_once()
            assert await app.services.telemetry.send_once()
        paths = [hit.path for hit in recording_server.hits]
        assert "/v1/version" in paths
        assert "/v1/telemetry" in paths
        report = next(h.body for h in recording_server.hits if h.path == "/v1/telemetry")
        assert set(report) == {
            "eventType", "instanceHash", "appVersion", "platform", "runtimeVersion", "tier"
        }  # fmt: skip
        assert report["tier"] == "community"
