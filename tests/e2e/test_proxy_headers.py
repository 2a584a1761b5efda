"""X-Forwarded-* is believed only with TRUST_PROXY, also by the HTTP server itself: a
client on the same host cannot forge its address into the activity log (or past the
per-address sign-in throttle) by sending the header."""

import asyncio
import os
import time
from pathlib import Path

import httpx

from tests.fixtures.app import free_port
from tests.fixtures.replica_processes import start_service, stop_process
from tests.fixtures.servers import RunningServer

FORGED = "198.51.100.7"


async def test_a_forwarded_address_from_loopback_is_not_believed(
    valkey_server: RunningServer, tmp_path: Path
) -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STORAGE_", "DB_", "AUTH_"))}
    env |= {
        "STORAGE_TYPE": "memory",
        "DB_HOST": valkey_server.host,
        "DB_PORT": str(valkey_server.port),
        "PORT": str(port),
        "BIND_HOST": "127.0.0.1",
        "WORKSPACE_DISABLED": "false",
        "AUTH_SECRET": "a-test-secret-that-is-long-enough-0123456789",
        "ENTITLEMENT_URL": "http://127.0.0.1:9",
        "RELEASES_URL": "http://127.0.0.1:9",
        "SVC_DATA_DIR": str(tmp_path),
    }
    process = start_service(env, tmp_path / "serve.log")
    base = f"http://127.0.0.1:{port}"
    try:
        async with httpx.AsyncClient(base_url=base, headers={"Origin": base}, timeout=10) as api:
            deadline = time.monotonic() + 60
            while True:
                try:
                    if (await api.get("/api/health")).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                assert time.monotonic() < deadline, (tmp_path / "serve.log").read_text()
                await asyncio.sleep(0.1)
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
    finally:
        stop_process(process)
