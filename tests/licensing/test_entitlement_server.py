"""The entitlement server over real HTTP: keys, online tokens, offline files."""

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import jwt

from svc_monitor.licensing.tokens import verify
from tests.fixtures.app import free_port
from tests.fixtures.licensing import (
    ADMIN_TOKEN,
    EntitlementServer,
    EntitlementServerFactory,
    FakeClock,
    SigningKey,
)
from tests.fixtures.servers import HOST

DAY = 86400


async def new_license(
    client: httpx.AsyncClient, server: EntitlementServer, **fields: object
) -> dict[str, Any]:
    body = {"tier": "pro", "customer": {"name": "Acme", "email": "ops@acme.test"}, **fields}
    response = await client.post(f"{server.url}/admin/licenses", json=body, headers=server.admin)
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    return created


async def offline_file(
    client: httpx.AsyncClient, server: EntitlementServer, license_id: object, token: str
) -> httpx.Response:
    return await client.post(
        f"{server.url}/admin/licenses/{license_id}/offline-file",
        headers={"Authorization": f"Bearer {token}"},
    )


class TestOnlineTokens:
    async def test_a_pro_key_gets_an_online_token_for_seven_days(
        self, entitlement_server: EntitlementServerFactory
    ):
        clock = FakeClock()
        async with entitlement_server(clock=clock) as server, httpx.AsyncClient() as client:
            created = await new_license(client, server, instanceLimit=4)
            assert str(created["key"]).startswith("svc_")
            reply = await client.post(
                f"{server.url}/v1/entitlements", json={"licenseKey": created["key"]}
            )
        assert reply.status_code == 200
        claims = verify(reply.json()["token"], now=clock.now, mode="online")
        assert claims.tier.value == "pro"
        assert claims.license_id == created["id"]
        assert claims.instance_limit == 4
        assert claims.expires_at == int(clock.now) + 7 * DAY
        assert "webhookOperationalEvents" in claims.features
        assert created["key"] not in reply.text  # sub is the licence id, never the key

    async def test_expiry_sooner_than_a_week_caps_the_token(
        self, entitlement_server: EntitlementServerFactory
    ):
        clock = FakeClock()
        expires_ms = int((clock.now + 2 * DAY) * 1000)
        async with entitlement_server(clock=clock) as server, httpx.AsyncClient() as client:
            created = await new_license(client, server, expiresAt=expires_ms)
            reply = await client.post(
                f"{server.url}/v1/entitlements", json={"licenseKey": created["key"]}
            )
        assert jwt.decode(reply.json()["token"], options={"verify_signature": False})["exp"] == (
            expires_ms // 1000
        )

    async def test_unknown_suspended_and_expired_keys_are_refused(
        self, entitlement_server: EntitlementServerFactory
    ):
        clock = FakeClock()
        async with entitlement_server(clock=clock) as server, httpx.AsyncClient() as client:
            url = f"{server.url}/v1/entitlements"
            unknown = await client.post(url, json={"licenseKey": "svc_nope"})
            suspended = await new_license(client, server)
            await client.patch(
                f"{server.url}/admin/licenses/{suspended['id']}",
                json={"status": "suspended"},
                headers=server.admin,
            )
            lapsed = await new_license(client, server, expiresAt=int((clock.now + DAY) * 1000))
            clock.advance(days=2)
            replies = [
                await client.post(url, json={"licenseKey": k})
                for k in (suspended["key"], lapsed["key"])
            ]
        assert unknown.status_code == 404
        assert [r.status_code for r in replies] == [403, 403]
        assert "suspended" in replies[0].json()["message"]
        assert "expired" in replies[1].json()["message"]


class TestOfflineFiles:
    async def test_offline_file_is_a_jwt_download_valid_366_days_for_perpetual(
        self, entitlement_server: EntitlementServerFactory
    ):
        clock = FakeClock()
        async with entitlement_server(clock=clock) as server, httpx.AsyncClient() as client:
            created = await new_license(client, server, tier="enterprise")
            reply = await offline_file(client, server, created["id"], ADMIN_TOKEN)
        assert reply.status_code == 200
        assert reply.headers["content-type"] == "application/jwt"
        assert "license-offline.jwt" in reply.headers["content-disposition"]
        claims = verify(reply.text, now=clock.now, mode="offline")
        assert claims.tier.value == "enterprise"
        assert claims.expires_at == int(clock.now) + 366 * DAY

    async def test_offline_expiry_is_the_licence_expiry_when_sooner(
        self, entitlement_server: EntitlementServerFactory
    ):
        clock = FakeClock()
        expires_ms = int((clock.now + 40 * DAY) * 1000)
        async with entitlement_server(clock=clock) as server, httpx.AsyncClient() as client:
            created = await new_license(client, server, expiresAt=expires_ms)
            reply = await offline_file(client, server, created["id"], ADMIN_TOKEN)
        assert verify(reply.text, now=clock.now).expires_at == expires_ms // 1000

    async def test_ownership_status_tier_and_expiry_are_rechecked(
        self, entitlement_server: EntitlementServerFactory
    ):
        clock = FakeClock()
        async with entitlement_server(clock=clock) as server, httpx.AsyncClient() as client:

            async def account(name: str) -> dict[str, str]:
                reply = await client.post(
                    f"{server.url}/admin/accounts",
                    json={"name": name, "email": f"{name}@corp.test"},
                    headers=server.admin,
                )
                assert reply.status_code == 201
                body: dict[str, str] = reply.json()
                return body

            owner, other = await account("owner"), await account("other")
            owned = await new_license(client, server, accountId=owner["id"])
            community = await new_license(client, server, tier="community", accountId=owner["id"])
            lapsing = await new_license(
                client, server, accountId=owner["id"], expiresAt=int((clock.now + DAY) * 1000)
            )
            own = await offline_file(client, server, owned["id"], owner["token"])
            not_theirs = await offline_file(client, server, owned["id"], other["token"])
            free = await offline_file(client, server, community["id"], owner["token"])
            await client.patch(
                f"{server.url}/admin/licenses/{owned['id']}",
                json={"status": "cancelled"},
                headers=server.admin,
            )
            cancelled = await offline_file(client, server, owned["id"], owner["token"])
            clock.advance(days=2)
            expired = await offline_file(client, server, lapsing["id"], owner["token"])
            no_token = await client.post(f"{server.url}/admin/licenses/{owned['id']}/offline-file")
            bad_token = await offline_file(client, server, owned["id"], "svcadm_wrong")
            missing = await offline_file(client, server, "no-such-licence", ADMIN_TOKEN)
            # An account may not create licences or accounts: staff only.
            self_serve = await client.post(
                f"{server.url}/admin/licenses",
                json={"tier": "enterprise", "customer": {"name": "x", "email": "x@y.test"}},
                headers={"Authorization": f"Bearer {owner['token']}"},
            )
        assert own.status_code == 200
        assert not_theirs.status_code == 403
        assert "another account" in not_theirs.json()["message"]
        assert free.status_code == 403
        assert "Pro and Enterprise" in free.json()["message"]
        assert cancelled.status_code == 403
        assert "cancelled" in cancelled.json()["message"]
        assert expired.status_code == 403
        assert "expired" in expired.json()["message"]
        assert [no_token.status_code, bad_token.status_code, missing.status_code] == [401, 401, 404]
        assert self_serve.status_code == 403

    async def test_keys_and_tokens_are_stored_as_digests(
        self, entitlement_server: EntitlementServerFactory
    ):
        async with entitlement_server() as server, httpx.AsyncClient() as client:
            created = await new_license(client, server)
            listed = await client.get(f"{server.url}/admin/licenses", headers=server.admin)
            store = server.app.state.entitlements._store
            rows = await store.licenses_of(None)
        assert created["key"] not in listed.text
        assert listed.json()[0]["keyHint"] == str(created["key"])[:10]
        assert all(created["key"] not in str(tuple(row)) for row in rows)


class TestTelemetryAndVersion:
    async def test_reports_are_recorded_and_version_is_served(
        self, entitlement_server: EntitlementServerFactory
    ):
        report = {
            "instanceHash": "a" * 32,
            "appVersion": "0.1.0",
            "platform": "linux-x86_64",
            "runtimeVersion": "python-3.11.2",
            "tier": "community",
        }
        async with (
            entitlement_server(ENTITLEMENT_LATEST_VERSION="9.9.9") as server,
            httpx.AsyncClient() as client,
        ):
            accepted = await client.post(f"{server.url}/v1/telemetry", json=report)
            bad = await client.post(f"{server.url}/v1/telemetry", json={"tier": "gold"})
            version = await client.get(f"{server.url}/v1/version")
            rows = await server.app.state.entitlements._store.telemetry()
        assert accepted.status_code == 202
        assert bad.status_code == 422
        assert version.json()["latest"] == "9.9.9"
        assert [r.instance_hash for r in rows] == ["a" * 32]


class TestCommandLine:
    def test_keygen_writes_a_private_key_and_prints_the_public_entry(self, tmp_path: Path):
        out = tmp_path / "signing.pem"
        result = subprocess.run(
            [sys.executable, "-m", "svc_monitor", "license", "keygen", "--kid", "lic-2031-02",
             "--private-key-out", str(out)],
            capture_output=True, text=True, timeout=60, check=True,
        )  # fmt: skip
        assert oct(out.stat().st_mode & 0o777) == "0o600"
        assert "BEGIN PRIVATE KEY" in out.read_text()
        assert "BEGIN PRIVATE KEY" not in result.stdout  # the private half stays in the file
        assert '"lic-2031-02": """-----BEGIN PUBLIC KEY-----' in result.stdout
        again = subprocess.run(
            [sys.executable, "-m", "svc_monitor", "license", "keygen", "--kid", "lic-2031-02",
             "--private-key-out", str(out)],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert again.returncode == 2
        assert "exists" in again.stderr

    def test_entitlement_serve_starts_and_refuses_a_bad_environment(
        self, signing_key: SigningKey, tmp_path: Path
    ):
        port = free_port()
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("ENTITLEMENT", "LICENSE"))},
            "ENTITLEMENT_PORT": str(port),
            "ENTITLEMENT_SQLITE_FILEPATH": str(tmp_path / "ent.db"),
            "ENTITLEMENT_ADMIN_TOKEN": ADMIN_TOKEN,
            "LICENSE_SIGNING_PRIVATE_KEY": signing_key.private_pem,
            "LICENSE_SIGNING_KID": signing_key.kid,
        }
        bad = subprocess.run(
            [sys.executable, "-m", "svc_monitor", "entitlement", "serve"],
            env={**env, "LICENSE_SIGNING_KID": "2026-11"},
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert bad.returncode == 2
        assert "LICENSE_SIGNING_KID" in bad.stderr
        assert "PRIVATE KEY" not in bad.stderr
        process = subprocess.Popen(
            [sys.executable, "-m", "svc_monitor", "entitlement", "serve"],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            status = None
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline and status is None:
                try:
                    status = httpx.get(f"http://{HOST}:{port}/admin/licenses").status_code
                except httpx.TransportError:
                    time.sleep(0.1)
            assert status == 401
            assert (tmp_path / "ent.db").is_file()
        finally:
            process.terminate()
            process.wait(10)
