"""X-Forwarded-* is believed only with TRUST_PROXY, also by the HTTP server itself: a
client on the same host cannot forge its address into the activity log (or past the
per-address sign-in throttle) by sending the header."""

from pathlib import Path

import httpx

from tests.fixtures.replica_processes import replica_process, service_env
from tests.fixtures.servers import RunningServer

FORGED = "198.51.100.7"


async def test_a_forwarded_address_from_loopback_is_not_believed(
    valkey_server: RunningServer, tmp_path: Path
) -> None:
    env = service_env(
        valkey_server,
        tmp_path / "data",
        WORKSPACE_DISABLED="false",
        AUTH_SECRET="a-test-secret-that-is-long-enough-0123456789",
    )
    with replica_process(env, tmp_path / "serve.log") as service:
        base = service.url
        async with httpx.AsyncClient(base_url=base, headers={"Origin": base}, timeout=10) as api:
            registered = await api.post(
                "/api/auth/register",
                json={"email": "o@example.com", "name": "O", "password": "a-long-password-1"},
                headers={"X-Forwarded-For": FORGED},
            )
            assert registered.status_code == 201, registered.text
            changed = await api.put(
                "/api/settings",
                json={"auditPollIntervalMs": 5000},
                headers={"X-Forwarded-For": FORGED, "X-Forwarded-Proto": "https"},
            )
            assert changed.status_code == 200, changed.text
            entries = (
                await api.get("/api/workspace/activity", params={"action": "PUT /api/settings"})
            ).json()["entries"]
    assert [e["sourceIp"] for e in entries] == ["127.0.0.1"]
