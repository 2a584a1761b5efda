"""Licence costs a user could feel: verifying a token, answering /api/license/status,
a feature gate on a route, and the entitlement server minting online tokens.

Prints:
  - RS256 verifications per second (3072-bit key, the embedded key's size);
  - median time of GET /api/license/status and of a gated vs an ungated route
    (in-process ASGI, so the figure is the service's own work);
  - online grants per second from the entitlement server (sign + store, SQLite memory).

Everything is in this process; no network beyond loopback-free ASGI calls. User control
is off: the bench calls the API without signing in. --quick runs a few requests and a
fraction of a second per rate: it checks that the bench runs, its figures mean nothing.

    .venv/bin/python bench/licensing.py [--requests 2000] [--quick]
"""

import argparse
import asyncio
import logging
import statistics
import tempfile
import time
import uuid
from typing import Any

import httpx
from fastapi.routing import APIRoute

from svc_monitor.app import create_app
from svc_monitor.config import Settings
from svc_monitor.licensing.dependencies import RequireFeature
from svc_monitor.licensing.entitlement.app import create_entitlement_app
from svc_monitor.licensing.entitlement.config import EntitlementSettings
from svc_monitor.licensing.keys import trusted_for_tests
from svc_monitor.licensing.models import Feature, Tier
from svc_monitor.licensing.tokens import Customer, key_pair, load_private_key, sign, verify

KID = "lic-2099-02"
ADMIN = "bench-admin-token-" + "y" * 32


def mint(private_pem: str, *, tier: Tier = Tier.ENTERPRISE) -> str:
    now = int(time.time())
    return sign(
        private_key=load_private_key(private_pem),
        kid=KID,
        license_id=str(uuid.uuid4()),
        issuance_id=str(uuid.uuid4()),
        tier=tier,
        features=[],
        customer=Customer("Bench", "bench@example.test"),
        instance_limit=1,
        mode="offline",
        issued_at=now,
        expires_at=now + 200 * 86400,
    )


def verifications_per_second(token: str, seconds: float) -> float:
    count, started = 0, time.perf_counter()
    while time.perf_counter() - started < seconds:
        verify(token, now=time.time())
        count += 1
    return count / (time.perf_counter() - started)


async def median_ms(client: httpx.AsyncClient, path: str, requests: int) -> float:
    times = []
    for _ in range(requests):
        started = time.perf_counter()
        reply = await client.get(path)
        times.append((time.perf_counter() - started) * 1000)
        assert reply.status_code == 200, reply.text
    return statistics.median(times)


async def monitor_figures(token: str, requests: int, data_dir: str) -> dict[str, float]:
    values: dict[str, Any] = {
        "STORAGE_TYPE": "memory",
        "SVC_OFFLINE_LICENSE": token,
        "ENTITLEMENT_URL": "http://127.0.0.1:9",
        "RELEASES_URL": "http://127.0.0.1:9",
        "SVC_DATA_DIR": data_dir,
        "WORKSPACE_DISABLED": True,  # the bench calls the API without signing in
    }
    app = create_app(Settings(_env_file=None, **values))

    async def plain() -> dict[str, str]:
        return {"ok": "yes"}

    gate = RequireFeature(Feature.ANOMALY_DETECTION).depends
    app.router.routes.insert(0, APIRoute("/api/_bench/gated", plain, dependencies=[gate]))
    app.router.routes.insert(0, APIRoute("/api/_bench/open", plain))
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://bench") as client,
    ):
        for path in ("/api/license/status", "/api/_bench/gated", "/api/_bench/open"):
            await median_ms(client, path, 50)  # warm up
        return {
            "status": await median_ms(client, "/api/license/status", requests),
            "gated": await median_ms(client, "/api/_bench/gated", requests),
            "open": await median_ms(client, "/api/_bench/open", requests),
        }


async def grants_per_second(private_pem: str, seconds: float) -> float:
    values: dict[str, Any] = {
        "ENTITLEMENT_STORAGE_TYPE": "memory",
        "ENTITLEMENT_ADMIN_TOKEN": ADMIN,
        "LICENSE_SIGNING_PRIVATE_KEY": private_pem,
        "LICENSE_SIGNING_KID": KID,
    }
    app = create_entitlement_app(EntitlementSettings(_env_file=None, **values))
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://ent") as client,
    ):
        body: dict[str, Any] = {"tier": "pro", "customer": {"name": "B", "email": "b@b.test"}}
        created = await client.post(
            "/admin/licenses", json=body, headers={"Authorization": f"Bearer {ADMIN}"}
        )
        assert created.status_code == 201, created.text
        key = created.json()["key"]
        count, started = 0, time.perf_counter()
        while time.perf_counter() - started < seconds:
            reply = await client.post("/v1/entitlements", json={"licenseKey": key})
            assert reply.status_code == 200, reply.text
            count += 1
        return count / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--quick", action="store_true", help="tiny sizes; its figures mean nothing")
    args = parser.parse_args()
    verify_s, grant_s = 2.0, 3.0
    if args.quick:
        args.requests, verify_s, grant_s = 20, 0.2, 0.2
    logging.basicConfig(level=logging.ERROR)
    private_pem, public_pem = key_pair(bits=3072)
    with trusted_for_tests(KID, public_pem), tempfile.TemporaryDirectory() as data_dir:
        token = mint(private_pem)
        rate = verifications_per_second(token, verify_s)
        figures = asyncio.run(monitor_figures(token, args.requests, data_dir))
        grants = asyncio.run(grants_per_second(private_pem, grant_s))
    print(f"RS256 licence verification (3072-bit): {rate:,.0f} per second")
    print(f"GET /api/license/status: median {figures['status']:.3f} ms")
    print(
        f"feature gate: median {figures['gated']:.3f} ms gated vs {figures['open']:.3f} ms open "
        f"({(figures['gated'] - figures['open']) * 1000:+.0f} us)"
    )
    print(f"entitlement server online grants (sign + store, SQLite memory): {grants:,.0f} per s")


if __name__ == "__main__":
    main()
