"""What user control costs a user could feel: a request's access check, signing in, and
reading the activity log.

Prints:
  - median time of `GET /api/connections` with user control off, with a session cookie
    inside its 30 s cache, with a cookie that must be re-checked, and with a personal API
    token (in-process ASGI, so the figure is the service's own work);
  - median sign-in time (`POST /api/auth/login`: argon2id verification on a thread);
  - median `GET /api/workspace/activity?limit=100` with 100,000 entries stored, on memory,
    an SQLite file and PostgreSQL (when reachable on 127.0.0.1:5432).

Everything runs in this process against a Valkey it starts on a free loopback port.
--quick runs a few requests over 1,000 entries: it checks that the bench runs, its
figures mean nothing.

    .venv/bin/python bench/auth.py [--requests 400] [--quick]
"""

import argparse
import asyncio
import contextlib
import logging
import statistics
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import asyncpg
import httpx
from sqlalchemy import insert

from svc_monitor.app import create_app
from svc_monitor.auth.store import activity_log
from svc_monitor.config import Settings
from svc_monitor.kit.embedded_valkey import EmbeddedValkey

ORIGIN = "http://bench.test"
PASSWORD = "bench password 1234"
ACTIVITY_ROWS = 100_000


class Clock:
    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


def settings(port: int, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "NODE_ENV": "test",
        "DB_HOST": "127.0.0.1",
        "DB_PORT": port,
        "SVC_DATA_DIR": tempfile.mkdtemp(prefix="svc-bench-"),
        "ENTITLEMENT_URL": "http://127.0.0.1:9",
        "RELEASES_URL": "http://127.0.0.1:9",
        "AUTH_SECRET": "b" * 40,
        "WORKSPACE_DISABLED": False,
    }
    values.update(overrides)
    return Settings(_env_file=None, **values)


@contextlib.asynccontextmanager
async def app_client(
    config: Settings, clock: Callable[[], float] = time.time
) -> AsyncIterator[tuple[Any, httpx.AsyncClient]]:
    app = create_app(config, clock=clock)
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url=ORIGIN, headers={"Origin": ORIGIN}) as c,
    ):
        yield app, c


async def median_ms(client: httpx.AsyncClient, path: str, requests: int, **kw: Any) -> float:
    times = []
    for _ in range(requests):
        started = time.perf_counter()
        response = await client.get(path, **kw)
        times.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200, response.text
    return statistics.median(times)


async def access_costs(port: int, requests: int, logins: int) -> None:
    async with app_client(settings(port, WORKSPACE_DISABLED=True)) as (_, open_client):
        off = await median_ms(open_client, "/api/connections", requests)
    clock = Clock()
    async with app_client(settings(port), clock) as (_, client):
        claimed = await client.post(
            "/api/auth/register",
            json={"email": "owner@bench.test", "name": "Owner", "password": PASSWORD},
        )
        assert claimed.status_code == 201, claimed.text
        cached = await median_ms(client, "/api/connections", requests)
        rechecked = []
        for _ in range(requests // 4):
            clock.now += 31  # past the cookie's cache: the session row is read again
            started = time.perf_counter()
            assert (await client.get("/api/connections")).status_code == 200
            rechecked.append((time.perf_counter() - started) * 1000)
        created = await client.post("/api/tokens", json={"name": "bench"})
        assert created.status_code == 201, created.text
        secret = created.json()["token"]
        bearer = await median_ms(
            client,
            "/api/connections",
            requests,
            headers={"Authorization": f"Bearer {secret}"},
            cookies={},
        )
        times = []
        for _ in range(logins):
            started = time.perf_counter()
            answer = await client.post(
                "/api/auth/login", json={"email": "owner@bench.test", "password": PASSWORD}
            )
            times.append((time.perf_counter() - started) * 1000)
            assert answer.status_code == 200, answer.text
    print("GET /api/connections, median of", requests)
    print(f"  user control off:              {off:6.2f} ms")
    print(f"  session cookie (cached):       {cached:6.2f} ms (+{cached - off:.2f})")
    recheck = statistics.median(rechecked)
    print(f"  session cookie (re-checked):   {recheck:6.2f} ms (+{recheck - off:.2f})")
    print(f"  personal API token:            {bearer:6.2f} ms (+{bearer - off:.2f})")
    print(f"sign-in (argon2id), median of {logins}: {statistics.median(times):.1f} ms")


async def activity_read(label: str, config: Settings, entries: int, requests: int) -> None:
    async with app_client(config) as (app, client):
        claimed = await client.post(
            "/api/auth/register",
            json={"email": "owner@bench.test", "name": "Owner", "password": PASSWORD},
        )
        assert claimed.status_code == 201, claimed.text
        db = app.state.services.db
        now = int(time.time() * 1000)
        rows = [
            {
                "at": now - i * 1000,
                "actor_id": f"user-{i % 20}",
                "actor_name": f"User {i % 20}",
                "action": ("cli.command", "POST /api/connections", "auth.login")[i % 3],
                "source_ip": "127.0.0.1",
                "details": "{}",
            }
            for i in range(entries)
        ]
        await db.run(lambda conn: conn.execute(insert(activity_log), rows))
        newest = await median_ms(client, "/api/workspace/activity?limit=100", requests)
        filtered = await median_ms(
            client, "/api/workspace/activity?limit=100&actor=User%207&action=cli.command", requests
        )
    print(f"  {label:<12} newest 100: {newest:6.2f} ms   by person and action: {filtered:6.2f} ms")


async def postgres_url() -> str | None:
    name = f"svc_bench_{uuid.uuid4().hex[:8]}"
    try:
        conn = await asyncpg.connect("postgresql://postgres@127.0.0.1:5432/postgres", timeout=3)
    except (OSError, asyncpg.PostgresError):
        return None
    try:
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    return f"postgresql://postgres@127.0.0.1:5432/{name}"


async def drop_postgres(url: str) -> None:
    name = url.rsplit("/", 1)[1]
    conn = await asyncpg.connect("postgresql://postgres@127.0.0.1:5432/postgres", timeout=3)
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await conn.close()


async def main(requests: int, logins: int, entries: int, reads: int) -> None:
    valkey = EmbeddedValkey()
    valkey.start()
    try:
        await access_costs(valkey.port, requests, logins)
        print(f"GET /api/workspace/activity with {entries:,} entries, median of {reads}")
        await activity_read("memory", settings(valkey.port), entries, reads)
        with tempfile.TemporaryDirectory() as tmp:
            sqlite = settings(
                valkey.port,
                STORAGE_TYPE="sqlite",
                STORAGE_SQLITE_FILEPATH=str(Path(tmp) / "bench.db"),
            )
            await activity_read("sqlite file", sqlite, entries, reads)
        url = await postgres_url()
        if url is None:
            print("  postgres     (not reachable on 127.0.0.1:5432: skipped)")
        else:
            try:
                pg = settings(valkey.port, STORAGE_TYPE="postgres", STORAGE_URL=url)
                await activity_read("postgres", pg, entries, reads)
            finally:
                await drop_postgres(url)
    finally:
        valkey.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--quick", action="store_true", help="tiny sizes; its figures mean nothing")
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    if args.quick:
        asyncio.run(main(requests=8, logins=2, entries=1_000, reads=3))
    else:
        asyncio.run(main(args.requests, logins=10, entries=ACTIVITY_ROWS, reads=50))
