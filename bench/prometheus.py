"""Scrape time of /api/prometheus/metrics with 1 to 1,000 connections, what a scrape does
to the rest of the service meanwhile, and the CPU time of one OTLP export cycle per node.

Starts up to 1,000 real Valkey servers on loopback (`--hz 1 --save ''`), each with keys in
three databases and a few dozen commands in its commandstats and slow log, registers them
with one in-process svc-monitor (memory storage, default poll settings: the polls keep
running while it is scraped, as in production), waits until every connection has been
observed, then scrapes `--scrapes` times in a row over HTTP (ASGI) and prints the median
and p99 (target: p99 under 50 ms at 100 connections), for the standard and the full
profile. Meanwhile `/api/health` is asked every 50 ms (its p99: target under 100 ms; every
answer other than 200 is counted, with why: a load balancer would take the service out) and a
probe records the longest single step of the event loop (target: about 20 ms).
Then it builds the OTLP export requests of the same registry in both modes and prints
the CPU per node of one cycle (families, conversion, protobuf encoding and gzip). --quick
scrapes 2 connections 3 times: it checks that the bench runs, its figures mean nothing.

    .venv/bin/python bench/prometheus.py [--scrapes 200] [--sizes 1,20,100,500,1000] [--quick]
"""

import argparse
import asyncio
import contextlib
import gzip
import statistics
import tempfile
import time
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Literal

import httpx
import uvloop
import valkey

from _servers import LoopLag, Server, start_servers, stop_servers
from svc_monitor.app import create_app
from svc_monitor.config import ExportMode, Settings, StorageType
from svc_monitor.prometheus.service import PrometheusService
from svc_monitor.services import Services

NOWHERE = "http://127.0.0.1:9"  # the update check must not leave loopback
METRICS = "/api/prometheus/metrics"
PROFILES: tuple[Literal["standard", "full"], ...] = ("standard", "full")


def fill(port: int) -> None:
    """Keys in three databases, varied commands, slow log entries: a realistic INFO."""
    for db in range(3):
        with valkey.Valkey(host="127.0.0.1", port=port, db=db) as client:
            pipe = client.pipeline(transaction=False)
            for i in range(200):
                pipe.set(f"user:{i}", "x" * 32, ex=3600 if i % 2 else None)
                pipe.hset(f"h:{i}", mapping={"a": 1, "b": 2})
                pipe.lpush(f"l:{i % 10}", i)
                pipe.sadd(f"s:{i % 10}", i)
                pipe.zadd(f"z:{i % 10}", {str(i): i})
                pipe.get(f"user:{i}")
                pipe.hgetall(f"h:{i}")
                pipe.incr("counter")
            pipe.config_set("slowlog-log-slower-than", 0)
            pipe.execute()


@contextlib.asynccontextmanager
async def monitor(
    servers: list[Server], profile: Literal["standard", "full"]
) -> AsyncIterator[tuple[PrometheusService, httpx.AsyncClient]]:
    settings = Settings(
        _env_file=None,
        STORAGE_TYPE=StorageType.MEMORY,
        DB_HOST="127.0.0.1",
        DB_PORT=servers[0].port,
        ENTITLEMENT_URL=NOWHERE,
        RELEASES_URL=NOWHERE,
        LOG_LEVEL="warning",
        METRICS_EXPORT_PROFILE=profile,
        WORKSPACE_DISABLED=True,  # the bench calls the API without signing in
    )
    # As the command line does: the loaded service's objects out of the collector's sight.
    app = create_app(settings, freeze_heap=True)
    services: Services = app.state.services
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://bench") as client,
    ):
        for server in servers[1:]:
            response = await client.post(
                "/api/connections",
                json={"name": f"v{server.port}", "host": "127.0.0.1", "port": server.port},
            )
            response.raise_for_status()
        await observed(services, len(servers))
        yield app.state.features.prometheus, client


async def observed(services: Services, count: int) -> None:
    ids = [c.id for c in await services.connections.list()]
    for _ in range(600):  # bounded: 60 s
        if all(services.live_state.latest(i) is not None for i in ids) and len(ids) == count:
            await asyncio.sleep(2)  # the slower polls (slow log, commandstats) too
            return
        await asyncio.sleep(0.1)
    raise RuntimeError("not every connection was observed within 60 s")


async def scrape_times(client: httpx.AsyncClient, scrapes: int) -> tuple[list[float], int]:
    times: list[float] = []
    size = 0
    for _ in range(scrapes):
        started = time.perf_counter()
        response = await client.get(METRICS)
        times.append((time.perf_counter() - started) * 1000)
        response.raise_for_status()
        size = len(response.content)
    return times, size


class HealthProbe:
    """Asks /api/health every 50 ms and keeps each answer's time: what a load balancer's
    check sees while the service is being scraped."""

    def __init__(self, client: httpx.AsyncClient) -> None:
        self._client = client
        self.times_ms: list[float] = []
        self.refused: list[str] = []  # each answer other than 200, and why
        self._stop = False

    async def run(self) -> None:
        while not self._stop:
            started = time.perf_counter()
            response = await self._client.get("/api/health")
            self.times_ms.append((time.perf_counter() - started) * 1000)
            if response.status_code != 200:
                # Kept, not raised: how often a load balancer would have taken the service
                # out, and why, is the figure.
                body = response.json()
                self.refused.append(
                    f"{response.status_code} storage {body.get('storage', {}).get('error')}"
                    f", database {body.get('database', {}).get('status')}"
                )
            await asyncio.sleep(0.05)

    def stop(self) -> None:
        self._stop = True


def p99(values: list[float]) -> float:
    return statistics.quantiles(values, n=100)[98] if len(values) >= 2 else values[0]


async def export_cpu_per_node(
    prometheus: PrometheusService, nodes: int, repeats: int
) -> dict[str, float]:
    from svc_monitor.otlp.export.semconv import build_requests
    from svc_monitor.otlp.export.series_memory import SeriesMemory

    figures: dict[str, float] = {}
    for mode in (ExportMode.MIRROR, ExportMode.SEMCONV):
        memory = SeriesMemory(bound_ns=300 * 10**9)
        started = time.process_time()
        for _ in range(repeats):
            families = await prometheus.families()
            requests = build_requests(
                families, mode=mode, now_ns=time.time_ns(), series_memory=memory
            )
            for _key, message in requests:
                gzip.compress(message.SerializeToString(), compresslevel=6)
        figures[mode.value] = (time.process_time() - started) * 1000 / repeats / nodes
    return figures


async def run(servers: list[Server], sizes: list[int], scrapes: int, export_repeats: int) -> None:
    biggest = max(sizes)
    for size in sizes:
        for profile in PROFILES:
            async with monitor(servers[:size], profile) as (prometheus, client):
                await scrape_times(client, 5)  # warm: first-use imports
                lag, health = LoopLag(), HealthProbe(client)
                probes = [asyncio.create_task(lag.run()), asyncio.create_task(health.run())]
                times, body = await scrape_times(client, scrapes)
                lag.stop()
                health.stop()
                await asyncio.gather(*probes)
                print(
                    f"{size:>4} connections, {profile:<8}: scrape median "
                    f"{statistics.median(times):6.2f} ms, p99 {p99(times):6.2f} ms "
                    f"({body / 1024:,.0f} KiB); longest loop step {max(lag.lags_ms):.0f} ms, "
                    f"/api/health p99 {p99(health.times_ms):.1f} ms, "
                    f"{len(health.refused)} of {len(health.times_ms)} not 200"
                    + (f" (first: {health.refused[0]})" if health.refused else "")
                )
                if profile == "standard" and size == biggest:
                    cpu = await export_cpu_per_node(prometheus, size, export_repeats)
                    for mode, ms in cpu.items():
                        print(f"OTLP export cycle, {mode}: {ms:.3f} ms CPU per node")


def writer_ms(connections: int = 1000) -> tuple[int, float]:
    """The text writer alone: lines written and the best of 5 times (ms) for the families a
    thousand connections fill most (INFO fields, and commandstats by command)."""
    from svc_monitor.prometheus import catalogue as c
    from svc_monitor.prometheus.collector import Rows
    from svc_monitor.prometheus.text import write

    addresses = [f"127.0.0.1:{7000 + i}" for i in range(connections)]
    commands = ("get", "set", "info", "slowlog|len", "hgetall", "lpush", "sadd", "zadd", "incr")
    families = []
    for spec in c.INFO_FIELDS[:45]:
        rows = Rows(spec.family)
        for i, address in enumerate(addresses):
            rows.add(address, i * 1.5)
        families.append(rows)
    for family in (c.COMMAND_CALLS, c.COMMAND_LATENCY):
        rows = Rows(family)
        for address in addresses:
            for i, command in enumerate(commands):
                rows.add_metric([address, command], float(i))
        families.append(rows)
    best, out = float("inf"), list[str]()
    for _ in range(5):
        out = []
        started = time.perf_counter()
        for rows in families:
            write(rows, out)
        best = min(best, time.perf_counter() - started)
    return sum(line.count("\n") for line in out), best * 1000


def started_and_filled(count: int, workdir: Path) -> list[Server]:
    servers = start_servers(count, workdir)
    try:
        with ThreadPoolExecutor(max_workers=8) as pool:
            list(pool.map(fill, (s.port for s in servers)))
    except BaseException:
        stop_servers(servers)
        raise
    return servers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scrapes", type=int, default=200)
    parser.add_argument("--sizes", default="1,20,100,500,1000")
    parser.add_argument("--quick", action="store_true", help="tiny sizes; its figures mean nothing")
    args = parser.parse_args()
    sizes = [2] if args.quick else [int(s) for s in args.sizes.split(",")]
    lines, ms = writer_ms()
    print(f"text writer alone: {lines:,} lines in {ms:.0f} ms")
    scrapes, repeats = (3, 2) if args.quick else (args.scrapes, 20)
    with tempfile.TemporaryDirectory(prefix="prometheus-bench-") as workdir:
        servers = started_and_filled(max(sizes), Path(workdir))
        try:
            uvloop.run(run(servers, sizes, scrapes, export_repeats=repeats))
        finally:
            stop_servers(servers)


if __name__ == "__main__":
    main()
