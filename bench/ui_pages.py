"""Server time to render each UI page, and to answer each chart's data, with a week of history.

Seeds one connection with a week of stored history at the default cadences (INFO
history every 10 s: 60,480 rows per table; commandstats, client snapshots, latency,
slow and command logs, ACL log), then requests every page in the navigation and
every chart data endpoint the pages draw from (`maxPoints=1000`, a 7-day window),
in process over ASGI (no network, so the figure is the server's own time), and prints
the median per path. Targets: pages under 100 ms, chart data under 50 ms. User control
is on, as by default, and the bench signs in as the owner: with it off, Team and
Activity only redirect to /. Any answer but 200 stops the bench.

A real Valkey (embedded, loopback) is the connection, so the live parts of each page
(INFO, CLIENT LIST, MEMORY STATS ...) are real round trips.

With postgres, a database of its own on 127.0.0.1:5432 (trust auth, as the tests use),
dropped at the end. --quick seeds an hour instead of a week and requests each path
twice: it checks that the bench runs, its figures mean nothing.

    .venv/bin/python bench/ui_pages.py [--storage memory|sqlite|postgres] [--runs 15] [--quick]
"""

import argparse
import asyncio
import contextlib
import json
import random
import statistics
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Callable
from functools import partial
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import uvloop
from pydantic import SecretStr
from sqlalchemy import Connection, Table

from svc_monitor.app import create_app
from svc_monitor.audit.store import acl_entries
from svc_monitor.client_analytics.store import client_snapshots
from svc_monitor.commandstats.store import commandstats_samples
from svc_monitor.config import Settings
from svc_monitor.info_history.store import MetricsStore, memory_snapshots, stats_samples
from svc_monitor.kit.embedded_valkey import EmbeddedValkey
from svc_monitor.latency_analytics.store import latency_histograms, latency_snapshots
from svc_monitor.services import Services
from svc_monitor.slowlog.store import commandlog_entries, slowlog_entries
from svc_monitor.web.ui import NAV

NOWHERE = "http://127.0.0.1:9"  # nothing may leave loopback
ORIGIN = "http://svc.bench"
PG_ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
CONNECTION = "env-default"
WEEK_MS = 7 * 24 * 3_600_000
HOUR_MS = 3_600_000
# Every chart source the pages draw from, with the longest window its page offers.
CHART_SOURCES = (
    ("/api/metrics/history", WEEK_MS),  # dashboard, clients, memory "used"
    ("/api/memory-analytics/snapshots?limit=2000", HOUR_MS),  # memory RSS / fragmentation
    ("/ui/clients/timeseries", 6 * HOUR_MS),  # clients by name (capped at 6 h by the page)
    ("/api/metrics/latency/history/command", WEEK_MS),  # live LATENCY HISTORY
)
COMMANDS = ("get", "set", "hgetall", "lrange", "zadd", "del", "expire", "mget")
BATCH = 5_000


def every(step_ms: int, start_ms: int, end_ms: int) -> range:
    return range(start_ms, end_ms, step_ms)


def stats_rows(start: int, end: int) -> list[dict[str, Any]]:
    return [
        {
            "connection_id": CONNECTION,
            "captured_at": t,
            "ops_per_sec": random.randint(1_000, 50_000),
            "connected_clients": random.randint(10, 500),
            "blocked_clients": random.randint(0, 3),
            "used_memory": random.randint(1 << 28, 1 << 30),
            "cpu_sys_percent": random.random() * 30,
            "cpu_user_percent": random.random() * 50,
            "net_input_kbps": random.random() * 5_000,
            "net_output_kbps": random.random() * 20_000,
            "hit_ratio": random.random(),
            "keys": random.randint(1_000_000, 2_000_000),
            "expires": random.randint(0, 100_000),
            "evicted_keys": 0,
            "connected_replicas": 1,
        }
        for t in every(10_000, start, end)
    ]


def memory_rows(start: int, end: int) -> list[dict[str, Any]]:
    return [
        {
            "connection_id": CONNECTION,
            "captured_at": t,
            "used_memory": random.randint(1 << 28, 1 << 30),
            "used_memory_rss": random.randint(1 << 28, 1 << 30),
            "used_memory_peak": 1 << 30,
            "mem_fragmentation_ratio": 1 + random.random(),
            "maxmemory": 2 << 30,
            "allocator_frag_ratio": 1 + random.random() / 10,
            "ops_per_sec": random.randint(1_000, 50_000),
            "cpu_sys_percent": random.random() * 30,
            "cpu_user_percent": random.random() * 50,
            "io_threaded_reads": 0,
            "io_threaded_writes": 0,
        }
        for t in every(10_000, start, end)
    ]


def commandstats_rows(start: int, end: int) -> list[dict[str, Any]]:
    return [
        {
            "connection_id": CONNECTION,
            "captured_at": t,
            "command": command,
            "calls": t // 1000,
            "usec": t // 100,
            "usec_per_call": 10.0,
            "rejected_calls": 0,
            "failed_calls": 0,
            "calls_delta": random.randint(0, 10_000),
            "usec_delta": random.randint(0, 100_000),
            "interval_ms": 60_000,
        }
        for t in every(60_000, start, end)
        for command in COMMANDS
    ]


def client_rows(start: int, end: int) -> list[dict[str, Any]]:
    return [
        {
            "connection_id": CONNECTION,
            "captured_at": t,
            "client_id": n,
            "addr": f"127.0.0.1:{40_000 + n}",
            "laddr": "127.0.0.1:6379",
            "name": f"worker-{n % 5}",
            "username": "default",
            "db": 0,
            "cmd": random.choice(COMMANDS),
            "age": (t - start) // 1000,
            "idle": random.randint(0, 100),
            "flags": "N",
            "sub": 0,
            "psub": 0,
            "multi": -1,
            "qbuf": 0,
            "qbuf_free": 0,
            "obl": 0,
            "oll": 0,
            "omem": 0,
            "tot_mem": 20_000,
            "lib_name": None,
        }
        for t in every(60_000, start, end)
        for n in range(10)
    ]


def log_rows(start: int, end: int, *, commandlog: bool) -> list[dict[str, Any]]:
    rows = []
    for n, t in enumerate(every(120_000, start, end)):
        row = {
            "connection_id": CONNECTION,
            "captured_at": t,
            "node": "",
            "entry_id": n,
            "started_at": t // 1000,
            "duration": random.randint(10_000, 500_000),
            "command": random.choice(COMMANDS),
            "args": json.dumps(["key:" + str(n % 100), "value"]),
            "client_address": "127.0.0.1:40000",
            "client_name": "worker",
        }
        if commandlog:
            row["log_type"] = ("slow", "large-request", "large-reply")[n % 3]
        rows.append(row)
    return rows


def acl_rows(start: int, end: int) -> list[dict[str, Any]]:
    return [
        {
            "connection_id": CONNECTION,
            "captured_at": t,
            "entry_id": n,
            "count": 1,
            "reason": ("auth", "command", "key")[n % 3],
            "context": "toplevel",
            "object": "AUTH",
            "username": f"user-{n % 20}",
            "age_seconds": 1.0,
            "client_info": "id=1 addr=127.0.0.1:40000",
            "timestamp_created": t,
            "timestamp_last_updated": t,
        }
        for n, t in enumerate(every(300_000, start, end))
    ]


def latency_rows(start: int, end: int) -> list[dict[str, Any]]:
    return [
        {
            "connection_id": CONNECTION,
            "captured_at": t,
            "event_name": event,
            "latest_event_at": t,
            "latest_ms": random.randint(1, 200),
            "max_ms": 250,
        }
        for t in every(30_000, start, end)
        for event in ("command", "fast-command")
    ]


def histogram_rows(start: int, end: int) -> list[dict[str, Any]]:
    data = {c: {"calls": 1000, "histogram": {"1": 900, "2": 1000}} for c in COMMANDS}
    return [
        {"connection_id": CONNECTION, "captured_at": t, "data": data}
        for t in every(30_000, start, end)
    ]


SEEDS: dict[Table, Callable[[int, int], list[dict[str, Any]]]] = {
    stats_samples: stats_rows,
    memory_snapshots: memory_rows,
    commandstats_samples: commandstats_rows,
    client_snapshots: client_rows,
    slowlog_entries: lambda start, end: log_rows(start, end, commandlog=False),
    commandlog_entries: lambda start, end: log_rows(start, end, commandlog=True),
    acl_entries: acl_rows,
    latency_snapshots: latency_rows,
    latency_histograms: histogram_rows,
}


def insert_batch(table: Table, rows: list[dict[str, Any]], conn: Connection) -> None:
    conn.execute(table.insert(), rows)


async def seed(services: Services, start: int, end: int) -> dict[str, int]:
    counts = {}
    for table, make in SEEDS.items():
        rows = make(start, end)
        for first in range(0, len(rows), BATCH):
            batch = rows[first : first + BATCH]
            await services.db.run(partial(insert_batch, table, batch))
        counts[table.name] = len(rows)
    return counts


async def median_ms(client: httpx.AsyncClient, url: str, runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        response = await client.get(url, headers={"X-Connection-Id": CONNECTION})
        times.append((time.perf_counter() - started) * 1000)
        if response.status_code != 200:  # a refusal or a redirect is not the page's time
            raise SystemExit(f"GET {url}: HTTP {response.status_code}, expected 200")
    return statistics.median(times)


async def admin_sql(sql: str) -> None:
    conn = await asyncpg.connect(PG_ADMIN_URL, timeout=5)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


@contextlib.asynccontextmanager
async def storage_settings(kind: str, directory: Path) -> AsyncIterator[dict[str, Any]]:
    if kind == "sqlite":
        yield {"STORAGE_TYPE": "sqlite", "STORAGE_SQLITE_FILEPATH": directory / "bench.db"}
    elif kind == "postgres":
        # A database of its own: rows of an earlier run, or of the tests, would skew it.
        name = f"svc_bench_{uuid.uuid4().hex[:8]}"
        await admin_sql(f'CREATE DATABASE "{name}"')
        try:
            url = PG_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"
            yield {"STORAGE_TYPE": "postgres", "STORAGE_URL": url}
        finally:
            await admin_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    else:
        yield {"STORAGE_TYPE": "memory"}


async def sign_in_as_owner(client: httpx.AsyncClient) -> None:
    """The first account is the owner; its session cookie stays in the client's jar."""
    response = await client.post(
        "/api/auth/register",
        json={"email": "owner@bench.test", "name": "Owner", "password": "bench password 1234"},
    )
    if response.status_code != 201:
        raise SystemExit(f"could not register the owner: HTTP {response.status_code}")


async def main(storage: str, runs: int, history_ms: int) -> None:
    valkey = EmbeddedValkey()
    valkey.start()
    try:
        with tempfile.TemporaryDirectory() as directory:
            async with storage_settings(storage, Path(directory)) as stored:
                await measure(valkey.port, stored, storage, runs, history_ms)
    finally:
        valkey.stop()


async def measure(
    valkey_port: int, stored: dict[str, Any], storage: str, runs: int, history_ms: int
) -> None:
    settings = Settings(
        _env_file=None,
        DB_HOST="127.0.0.1",
        DB_PORT=valkey_port,
        ENTITLEMENT_URL=NOWHERE,
        RELEASES_URL=NOWHERE,
        LOG_LEVEL="warning",
        AUTH_SECRET=SecretStr("b" * 40),
        **stored,
    )
    app = create_app(settings)
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(
            transport=transport, base_url=ORIGIN, headers={"Origin": ORIGIN}
        ) as client,
    ):
        await sign_in_as_owner(client)
        services: Services = app.state.services
        end = int(time.time() * 1000)
        counts = await seed(services, end - history_ms, end)
        # What the service's rollup job would have done over the span, in one pass.
        await MetricsStore(services.db).roll_up(now_ms=end)
        span = "a week" if history_ms == WEEK_MS else f"{history_ms // HOUR_MS} h"
        print(f"storage {storage}; seeded {span} of history for one connection:")
        for name, count in counts.items():
            print(f"  {name:22} {count:>8,} rows")
        await asyncio.sleep(1.5)  # the first polls: live parts of pages have data
        print(f"\nmedian of {runs} requests (server time, in process)")
        print("pages (target < 100 ms):")
        for page in NAV:
            ms = await median_ms(client, page.path, runs)
            print(f"  {page.path:58} {ms:7.1f} ms")
        print("chart data, maxPoints=1000, the page's longest window (target < 50 ms):")
        for path, window_ms in CHART_SOURCES:
            joiner = "&" if "?" in path else "?"
            query = f"from={end - window_ms}&to={end}&maxPoints=1000"
            ms = await median_ms(client, f"{path}{joiner}{query}", runs)
            label = f"{path} ({window_ms // HOUR_MS} h)"
            print(f"  {label:58} {ms:7.1f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--storage", choices=("memory", "sqlite", "postgres"), default="memory")
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--quick", action="store_true", help="tiny sizes; its figures mean nothing")
    args = parser.parse_args()
    if args.quick:
        uvloop.run(main(args.storage, runs=2, history_ms=HOUR_MS))
    else:
        uvloop.run(main(args.storage, args.runs, WEEK_MS))
