"""Offline activation and removal through /api/license/offline, and what status says."""

import json
import stat
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jwt
import pytest

from svc_monitor.licensing.service import LicenseService
from tests.fixtures.app import AppFactory, fresh_data_dir, make_settings, running_app
from tests.fixtures.licensing import FakeClock, SigningKey

DAY = 86400


def hs256_token(key: SigningKey) -> str:
    claims = jwt.decode(key.mint(), options={"verify_signature": False})
    return jwt.encode(claims, "a-shared-secret-of-32-bytes-long!", algorithm="HS256")


def none_token(key: SigningKey) -> str:
    _header, payload, _ = key.mint().split(".")
    import base64

    none = base64.urlsafe_b64encode(json.dumps({"alg": "none"}).encode()).rstrip(b"=").decode()
    return f"{none}.{payload}."


def tampered(key: SigningKey) -> str:
    import base64

    header, _, signature = key.mint(tier="pro").split(".")
    claims = jwt.decode(key.mint(tier="pro"), options={"verify_signature": False})
    claims["tier"] = "enterprise"
    body = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    return f"{header}.{body}.{signature}"


REFUSED: dict[str, tuple[Callable[[SigningKey], str], str]] = {
    "expired": (lambda k: k.mint(exp=int(time.time()) - 3 * DAY), "expired"),
    "tampered": (tampered, "signature does not match"),
    "wrong kid": (lambda k: k.mint(headers={"kid": "lic-2090-05"}), "upgrade svc-monitor"),
    "alg none": (none_token, "only RS256"),
    "HS256": (hs256_token, "only RS256"),
    "online token": (lambda k: k.mint(mode="online"), "an offline one is needed"),
}


class TestActivation:
    async def test_paste_activates_and_saves_the_file_with_mode_0600(
        self, memory_app_factory: AppFactory, signing_key: SigningKey
    ):
        token = signing_key.mint(tier="enterprise", instanceLimit=12)
        async with memory_app_factory() as app:
            reply = await app.client.put("/api/license/offline", json={"token": token})
            saved = Path(app.settings.SVC_DATA_DIR) / "license-offline.jwt"
        body = reply.json()
        assert reply.status_code == 200
        assert (body["tier"], body["source"], body["airGapped"]) == ("enterprise", "offline", True)
        assert body["instanceLimit"] == 12
        assert body["customer"] == {"name": "Acme", "email": "ops@acme.test"}
        assert saved.read_text().strip() == token
        assert stat.S_IMODE(saved.stat().st_mode) == 0o600

    async def test_raw_body_upload(self, memory_app_factory: AppFactory, signing_key: SigningKey):
        async with memory_app_factory() as app:
            reply = await app.client.put(
                "/api/license/offline",
                content=signing_key.mint(tier="pro") + "\n",
                headers={"Content-Type": "application/jwt"},
            )
        assert reply.json()["tier"] == "pro"

    @pytest.mark.parametrize("case", list(REFUSED))
    async def test_refused_tokens_answer_400_and_change_nothing(
        self, memory_app_factory: AppFactory, signing_key: SigningKey, case: str
    ):
        make, reason = REFUSED[case]
        good = signing_key.mint(tier="pro")
        async with memory_app_factory() as app:
            await app.client.put("/api/license/offline", json={"token": good})
            reply = await app.client.put("/api/license/offline", json={"token": make(signing_key)})
            status = (await app.client.get("/api/license/status")).json()
            saved = (Path(app.settings.SVC_DATA_DIR) / "license-offline.jwt").read_text()
        assert reply.status_code == 400
        assert reason in reply.json()["message"]
        assert reply.json()["fields"] == ["token"]
        assert status["tier"] == "pro"
        assert saved.strip() == good

    async def test_bad_requests_name_the_problem(self, memory_app_factory: AppFactory):
        async with memory_app_factory() as app:
            put = app.client.put
            empty = await put("/api/license/offline", json={"token": ""})
            extra = await put("/api/license/offline", json={"token": "a.b.c", "tier": "x"})
            not_json = await put(
                "/api/license/offline", content="{", headers={"Content-Type": "application/json"}
            )
            huge = await put(
                "/api/license/offline",
                content="x" * 100_000,
                headers={"Content-Type": "text/plain"},
            )
            xml = await put(
                "/api/license/offline", content="<a/>", headers={"Content-Type": "application/xml"}
            )
            no_file = await put("/api/license/offline", files={"other": ("a", b"x")})
            binary = await put(
                "/api/license/offline", content=b"\xff\xfe", headers={"Content-Type": "text/plain"}
            )
        assert (empty.status_code, empty.json()["fields"]) == (422, ["token"])
        assert extra.status_code == 422
        assert not_json.status_code == 422
        assert huge.status_code == 413
        assert xml.status_code == 415
        assert (no_file.status_code, no_file.json()["fields"]) == (422, ["file"])
        assert binary.status_code == 422

    async def test_removal_reverts_to_community(
        self, memory_app_factory: AppFactory, signing_key: SigningKey
    ):
        async with memory_app_factory() as app:
            nothing = await app.client.delete("/api/license/offline")
            await app.client.put("/api/license/offline", json={"token": signing_key.mint()})
            removed = await app.client.delete("/api/license/offline")
        assert nothing.status_code == 404
        assert removed.status_code == 200
        assert (removed.json()["tier"], removed.json()["airGapped"]) == ("community", False)

    async def test_an_environment_token_cannot_be_changed_here(
        self, memory_app_factory: AppFactory, signing_key: SigningKey
    ):
        pinned = signing_key.mint(tier="pro")
        async with memory_app_factory(SVC_OFFLINE_LICENSE=pinned) as app:
            status = (await app.client.get("/api/license/status")).json()
            put = await app.client.put("/api/license/offline", json={"token": signing_key.mint()})
            delete = await app.client.delete("/api/license/offline")
        assert (status["tier"], status["offlineFromEnvironment"]) == ("pro", True)
        assert put.status_code == delete.status_code == 409
        assert "SVC_OFFLINE_LICENSE" in put.json()["message"]

    async def test_offline_licence_with_an_online_key_is_a_fallback_not_air_gapped(
        self, memory_app_factory: AppFactory, signing_key: SigningKey
    ):
        async with memory_app_factory(SVC_LICENSE_KEY="svc_unreachable") as app:
            reply = await app.client.put("/api/license/offline", json={"token": signing_key.mint()})
        assert (reply.json()["tier"], reply.json()["airGapped"]) == ("enterprise", False)

    async def test_an_offline_file_path_from_the_environment_is_used(
        self, memory_app_factory: AppFactory, signing_key: SigningKey, tmp_path: Path
    ):
        path = tmp_path / "elsewhere" / "my.jwt"
        async with memory_app_factory(SVC_OFFLINE_LICENSE_FILE=path) as app:
            await app.client.put("/api/license/offline", json={"token": signing_key.mint()})
        assert path.is_file()
        async with memory_app_factory(SVC_OFFLINE_LICENSE_FILE=path) as app:
            assert (await app.client.get("/api/license/status")).json()["tier"] == "enterprise"


class TestTimeline:
    async def test_expiry_warnings_then_community(self, signing_key: SigningKey):
        clock = FakeClock()
        token = signing_key.mint(tier="pro", exp=int(clock.now) + 45 * DAY)
        settings = make_settings(STORAGE_TYPE="memory", SVC_OFFLINE_LICENSE=token)
        async with running_app(settings, clock=clock) as app:

            async def status() -> dict[str, Any]:
                body: dict[str, Any] = (await app.client.get("/api/license/status")).json()
                return body

            quiet = await status()
            clock.advance(days=20)  # 25 days left
            warned = await status()
            clock.advance(days=20)  # 5 days left
            urgent = await status()
            clock.advance(days=6)  # a day past expiry
            lapsed = await status()
        assert quiet["warnings"] == []
        assert [w["level"] for w in warned["warnings"]] == ["warning"]
        assert [w["level"] for w in urgent["warnings"]] == ["error"]
        assert urgent["tier"] == "pro"
        assert lapsed["tier"] == "community"
        assert any("expired" in w["message"] for w in lapsed["warnings"])

    async def test_clock_rollback_is_flagged_and_never_denies(self, signing_key: SigningKey):
        clock = FakeClock()
        data_dir = fresh_data_dir()
        token = signing_key.mint(tier="enterprise", iat=int(clock.now))
        settings = make_settings(
            STORAGE_TYPE="memory", SVC_DATA_DIR=data_dir, SVC_OFFLINE_LICENSE=token
        )
        async with running_app(settings, clock=clock) as app:
            before = (await app.client.get("/api/license/status")).json()
        clock.advance(days=-3)  # the clock was set back while the service was down
        async with running_app(settings, clock=clock) as app:
            after = (await app.client.get("/api/license/status")).json()
            clock.advance(days=3, hours=1)  # caught up again
            later = (await app.client.get("/api/license/status")).json()
        clock_file = json.loads((Path(data_dir) / "license-clock.json").read_text())
        assert before["clockRollbackSuspected"] is False
        assert after["clockRollbackSuspected"] is True
        assert after["tier"] == "enterprise"  # the token's iat is "in the future": still served
        assert later["clockRollbackSuspected"] is False
        assert clock_file["lastSeenMs"] >= int(before["expiresAt"]) - 90 * DAY * 1000
        assert stat.S_IMODE((Path(data_dir) / "license-clock.json").stat().st_mode) == 0o600

    async def test_a_tampered_file_on_disk_is_refused_at_startup(self, signing_key: SigningKey):
        data_dir = Path(fresh_data_dir())
        (data_dir / "license-offline.jwt").write_text(tampered(signing_key))
        settings = make_settings(STORAGE_TYPE="memory", SVC_DATA_DIR=data_dir)
        async with running_app(settings) as app:
            status = (await app.client.get("/api/license/status")).json()
        assert status["tier"] == "community"
        assert any("signature" in w["message"] for w in status["warnings"])


class TestTransport:
    def test_a_key_sent_over_plain_http_to_another_host_is_warned_about(self):
        def warnings_for(url: str) -> list[str]:
            # start() reads only the disk: no request goes anywhere in this test.
            service = LicenseService(make_settings(SVC_LICENSE_KEY="svc_k", ENTITLEMENT_URL=url))
            service.start()
            return [n.message for n in service.notices()]

        assert any("unencrypted" in m for m in warnings_for("http://192.0.2.1:9"))
        assert not any("unencrypted" in m for m in warnings_for("https://192.0.2.1"))
        assert not any("unencrypted" in m for m in warnings_for("http://127.0.0.1:9"))
