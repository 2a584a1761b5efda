"""Server time to render each UI page, and to answer each chart's data, with a week of history.

Seeds one connection with a week of stored history at the default cadences (INFO
history every 10 s: 60,480 rows per table; commandstats, client snapshots, latency,
slow and command logs, ACL log), then requests every page in the navigation and
every chart data endpoint the pages draw from (`maxPoints=1000`, a 7-day window),
in process over ASGI (no network, so the figure is the server's own time), and prints
the median per path. Targets: pages under 100 ms, chart data under 50 ms.

A real Valkey (embedded, loopback) is the connection, so the live parts of each page
(INFO, CLIENT LIST, MEMORY STATS ...) are real round trips.

    .venv/bin/python bench/ui_pages.py [--storage memory|sqlite|postgres] [--runs 15]
"""

import argparse
import asyncio
import json
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import uvloop
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


def every(step_ms: int, end_ms: int) -> range:
    return range(end_ms - WEEK_MS, end_ms, step_ms)


def stats_rows(end: int) -> list[dict[str, Any]]:
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
        for t in every(10_000, end)
    ]


def memory_rows(end: int) -> list[dict[str, Any]]:
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
        for t in every(10_000, end)
    ]


def commandstats_rows(end: int) -> list[dict[str, Any]]:
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
        for t in every(60_000, end)
        for command in COMMANDS
    ]


def client_rows(end: int) -> list[dict[str, Any]]:
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
            "age": (t - end + WEEK_MS) // 1000,
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
        for t in every(60_000, end)
        for n in range(10)
    ]


def log_rows(end: int, *, commandlog: bool) -> list[dict[str, Any]]:
    rows = []
    for n, t in enumerate(every(120_000, end)):
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


def acl_rows(end: int) -> list[dict[str, Any]]:
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
        for n, t in enumerate(every(300_000, end))
    ]


def latency_rows(end: int) -> list[dict[str, Any]]:
    return [
        {
            "connection_id": CONNECTION,
            "captured_at": t,
            "event_name": event,
            "latest_event_at": t,
            "latest_ms": random.randint(1, 200),
            "max_ms": 250,
        }
        for t in every(30_000, end)
        for event in ("command", "fast-command")
    ]


def histogram_rows(end: int) -> list[dict[str, Any]]:
    data = {c: {"calls": 1000, "histogram": {"1": 900, "2": 1000}} for c in COMMANDS}
    return [
        {"connection_id": CONNECTION, "captured_at": t, "data": data} for t in every(30_000, end)
    ]


SEEDS: dict[Table, Callable[[int], list[dict[str, Any]]]] = {
    stats_samples: stats_rows,
    memory_snapshots: memory_rows,
    commandstats_samples: commandstats_rows,
    client_snapshots: client_rows,
    slowlog_entries: lambda end: log_rows(end, commandlog=False),
    commandlog_entries: lambda end: log_rows(end, commandlog=True),
    acl_entries: acl_rows,
    latency_snapshots: latency_rows,
    latency_histograms: histogram_rows,
}


def insert_batch(table: Table, rows: list[dict[str, Any]], conn: Connection) -> None:
    conn.execute(table.insert(), rows)


async def seed(services: Services, end: int) -> dict[str, int]:
    counts = {}
    for table, make in SEEDS.items():
        rows = make(end)
        for start in range(0, len(rows), BATCH):
            batch = rows[start : start + BATCH]
            await services.db.run(partial(insert_batch, table, batch))
        counts[table.name] = len(rows)
    return counts


async def median_ms(client: httpx.AsyncClient, url: str, runs: int) -> tuple[float, int]:
    times = []
    status = 0
    for _ in range(runs):
        started = time.perf_counter()
        response = await client.get(url, headers={"X-Connection-Id": CONNECTION})
        times.append((time.perf_counter() - started) * 1000)
        status = response.status_code
    return statistics.median(times), status


def storage_settings(kind: str, directory: Path) -> dict[str, Any]:
    if kind == "sqlite":
        return {"STORAGE_TYPE": "sqlite", "STORAGE_SQLITE_FILEPATH": directory / "bench.db"}
    if kind == "postgres":
        return {"STORAGE_TYPE": "postgres", "STORAGE_URL": "postgresql://127.0.0.1:5432/test"}
    return {"STORAGE_TYPE": "memory"}


async def main(storage: str, runs: int) -> None:
    valkey = EmbeddedValkey()
    valkey.start()
    try:
        with tempfile.TemporaryDirectory() as directory:
            settings = Settings(
                _env_file=None,
                DB_HOST="127.0.0.1",
                DB_PORT=valkey.port,
                ENTITLEMENT_URL=NOWHERE,
                RELEASES_URL=NOWHERE,
                LOG_LEVEL="warning",
                **storage_settings(storage, Path(directory)),
            )
            app = create_app(settings)
            transport = httpx.ASGITransport(app=app)
            async with (
                app.router.lifespan_context(app),
                httpx.AsyncClient(transport=transport, base_url="http://svc.bench") as client,
            ):
                services: Services = app.state.services
                if storage == "postgres":  # a previous run's rows would double the history
                    for table in SEEDS:
                        await services.db.execute(table.delete())
                end = int(time.time() * 1000)
                counts = await seed(services, end)
                # What the service's rollup job would have done over the week, in one pass.
                await MetricsStore(services.db).roll_up(now_ms=end)
                print(f"storage {storage}; seeded a week of history for one connection:")
                for name, count in counts.items():
                    print(f"  {name:22} {count:>8,} rows")
                await asyncio.sleep(1.5)  # the first polls: live parts of pages have data
                print(f"\nmedian of {runs} requests (server time, in process)")
                print("pages (target < 100 ms):")
                for page in NAV:
                    ms, status = await median_ms(client, page.path, runs)
                    print(f"  {page.path:58} {ms:7.1f} ms   HTTP {status}")
                print("chart data, maxPoints=1000, the page's longest window (target < 50 ms):")
                for path, window_ms in CHART_SOURCES:
                    joiner = "&" if "?" in path else "?"
                    query = f"from={end - window_ms}&to={end}&maxPoints=1000"
                    ms, status = await median_ms(client, f"{path}{joiner}{query}", runs)
                    label = f"{path} ({window_ms // HOUR_MS} h)"
                    print(f"  {label:58} {ms:7.1f} ms   HTTP {status}")
    finally:
        valkey.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--storage", choices=("memory", "sqlite", "postgres"), default="memory")
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    uvloop.run(main(args.storage, args.runs))
