"""Throughput of the OTLP receivers: pushed metric points accepted per second on one core,
and spans stored per second by /v1/traces.

Points (target: 250,000/s for protobuf). An in-process svc-monitor (memory
storage, the default connection removed, the bench pinned to one CPU) with push
connections registered for every instance in the payload. Two payloads, each one export
request near the 1 MiB limit, as the Collector's redisreceiver writes them (gauges and
cumulative sums, ints as asInt, cpu.time and fragmentation ratio as doubles,
`server.address`/`server.port` resource attributes, `redis.version`):

- many instances: per instance the 28 unattributed metrics of the mapping table, 6
  cpu.time states and role, one point each (35 points);
- wide instances: the same plus db.keys/db.expires/db.avg_ttl for 256 databases and
  cmd.calls/cmd.usec for 1,024 commands (2,851 points), the per-connection caps.

Each is sent as protobuf and as OTLP JSON (the JSON payload holds 3 to 4 times fewer
instances: it takes that many more bytes per point). Every point maps to a field, so
accepted = sent. Each figure runs `--seconds` (10): one HISTORY_SAMPLE_INTERVAL_MS, so it
includes the one history sample per connection that a steady push stream pays for.
Two paths are timed: "decode+map" is `ingest_http.decode` and `MetricsReceiver.ingest`
(mapping, freshness, observe into live state and history: what a request costs past
the HTTP layer); "through HTTP" POSTs the same bytes to /v1/external/metrics through
httpx's ASGI transport (protobuf also gzipped, as the Collector sends it by default),
client included, in the same process on the same core.

Spans (target: 40,000/s with sqlite storage). `svc-monitor serve` in a
subprocess (STORAGE_TYPE=sqlite, watching an embedded Valkey), then `--clients` (4)
concurrent clients POST protobuf exports of 100 spans each (10 traces of 10 spans, scope
`@svc/bench`, every request with fresh trace ids) for `--spans-seconds`. Prints the
spans/s answered 200, the rows found in the sqlite file afterwards, and the CPU the
server and the clients used (they share the machine).

--quick sends requests of about 128 KiB (still one instance at least) for 0.2 s per points
figure and spans for half a second: it checks that the bench runs, its figures mean
nothing.

    .venv/bin/python bench/otlp_ingest.py [--seconds 10] [--spans-seconds 10] [--clients 4]
        [--only points|spans] [--profile] [--quick]
"""

import argparse
import asyncio
import contextlib
import cProfile
import gzip
import logging
import os
import pstats
import random
import socket
import sqlite3
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import httpx
import uvloop
from google.protobuf import json_format
from google.protobuf.internal.containers import RepeatedCompositeFieldContainer
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.metrics.v1.metrics_pb2 import (
    AggregationTemporality,
    NumberDataPoint,
    ScopeMetrics,
)
from opentelemetry.proto.trace.v1.trace_pb2 import Status

from svc_monitor.app import create_app
from svc_monitor.config import Settings, StorageType
from svc_monitor.kit.embedded_valkey import EmbeddedValkey
from svc_monitor.otlp.ingest.api import MAX_BODY_BYTES, Encoding, decode
from svc_monitor.otlp.ingest.mapping import CPU_STATES, TABLE
from svc_monitor.services import Features, Services

NOWHERE = "http://127.0.0.1:9"  # the update check must not leave loopback
METRICS = "/v1/external/metrics"
TRACES = "/v1/traces"
# Near the limit, with room for the JSON padding of a last instance.
TARGET_BYTES = MAX_BODY_BYTES - 48 * 1024
POINTS_TARGET = 250_000
SPANS_TARGET = 40_000
CUMULATIVE = AggregationTemporality.AGGREGATION_TEMPORALITY_CUMULATIVE
# Which mapped suffixes the redisreceiver sends as cumulative sums; the rest are gauges.
SUMS = frozenset(
    {
        "commands.processed",
        "connections.received",
        "connections.rejected",
        "keys.evicted",
        "keys.expired",
        "keyspace.hits",
        "keyspace.misses",
        "net.input",
        "net.output",
        "uptime",
        "cpu.time",
        "cmd.calls",
        "cmd.usec",
    }
)
COMMANDS = 1024
DATABASES = 256


# --- payloads ---


def _points(scope: ScopeMetrics, suffix: str) -> "RepeatedCompositeFieldContainer[NumberDataPoint]":
    """A new metric's point list, of the kind the receiver sends (gauge or cumulative sum)."""
    metric = scope.metrics.add(name=f"redis.{suffix}")
    if suffix in SUMS:
        metric.sum.aggregation_temporality = CUMULATIVE
        metric.sum.is_monotonic = True
        return metric.sum.data_points
    return metric.gauge.data_points


def add_instance(
    request: ExportMetricsServiceRequest, host: str, port: int, *, wide: bool, now_ns: int
) -> int:
    """One instance's scrape; the number of points."""
    resource_metrics = request.resource_metrics.add()
    attributes = resource_metrics.resource.attributes
    attributes.add(key="redis.version").value.string_value = "7.2.4"
    attributes.add(key="server.address").value.string_value = host
    attributes.add(key="server.port").value.string_value = str(port)
    scope = resource_metrics.scope_metrics.add()
    scope.scope.name = (
        "github.com/open-telemetry/opentelemetry-collector-contrib/receiver/redisreceiver"
    )
    start_ns = now_ns - 86_400 * 10**9
    points = 0
    rng = random.Random(port)
    for suffix, target in TABLE.items():
        if target.shape in ("db", "cmd") and not wide:
            continue
        if target.shape in ("mode", "latency"):
            continue  # the receiver's optional metrics: not in the measured payload
        data_points = _points(scope, suffix)
        if target.shape == "plain":
            attribute_sets: list[tuple[str, str] | None] = [None]
        elif target.shape == "cpu":
            attribute_sets = [("state", state) for state in sorted(CPU_STATES)]
        elif target.shape == "role":
            attribute_sets = [("role", "primary")]
        elif target.shape == "db":
            attribute_sets = [("db", str(i)) for i in range(DATABASES)]
        else:
            attribute_sets = [("cmd", f"cmd{i:04d}") for i in range(COMMANDS)]
        for attribute in attribute_sets:
            point = data_points.add(time_unix_nano=now_ns)
            if suffix in SUMS:
                point.start_time_unix_nano = start_ns
            if attribute is not None:
                point.attributes.add(key=attribute[0]).value.string_value = attribute[1]
            if target.decimal:
                point.as_double = rng.random() * 100
            elif target.shape == "role":
                point.as_int = 1
            else:
                point.as_int = rng.randrange(1, 10**9)
            points += 1
    return points


@dataclass
class Payload:
    name: str
    encoding: Encoding
    body: bytes
    points: int
    instances: list[tuple[str, int]]


def build_payload(name: str, encoding: Encoding, *, wide: bool, target_bytes: int) -> Payload:
    """As many instances as fit under `target_bytes` in `encoding`, and one at least."""
    now_ns = time.time_ns()
    one = ExportMetricsServiceRequest()
    add_instance(one, "10.0.0.1", 6379, wide=wide, now_ns=now_ns)
    count = max(1, target_bytes // (len(serialize(one, encoding)) + 4))
    while True:
        request = ExportMetricsServiceRequest()
        instances = [(f"10.{i // 250}.{i % 250 + 1}.1", 6379) for i in range(count)]
        points = sum(
            add_instance(request, host, port, wide=wide, now_ns=now_ns) for host, port in instances
        )
        body = serialize(request, encoding)
        if len(body) <= target_bytes or count == 1:
            return Payload(name, encoding, body, points, instances)
        count -= 1


def serialize(request: ExportMetricsServiceRequest, encoding: Encoding) -> bytes:
    if encoding is Encoding.PROTOBUF:
        return request.SerializeToString()
    text = json_format.MessageToJson(request, indent=None, use_integers_for_enums=True)
    return text.encode()


# --- points ---


@contextlib.asynccontextmanager
async def in_process_monitor(
    instances: set[tuple[str, int]],
) -> AsyncIterator[tuple[Features, httpx.AsyncClient]]:
    settings = Settings(
        _env_file=None,
        STORAGE_TYPE=StorageType.MEMORY,
        DB_HOST="127.0.0.1",
        DB_PORT=9,  # removed below, before it is polled much
        ENTITLEMENT_URL=NOWHERE,
        RELEASES_URL=NOWHERE,
        LOG_LEVEL="warning",
        WORKSPACE_DISABLED=True,
        SVC_DATA_DIR=Path(tempfile.mkdtemp(prefix="svc-bench-otlp-")),
    )
    app = create_app(settings, freeze_heap=True)
    # One request of 485 instances publishes ~1,000 readings at once: consumers that only
    # want ConnectionsChanged (queue of 100) warn of drops on every request. Not this
    # figure's business.
    logging.getLogger("svc_monitor.events").setLevel(logging.ERROR)
    services: Services = app.state.services
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://bench") as client,
    ):
        for connection in await services.connections.list():
            (await client.delete(f"/api/connections/{connection.id}")).raise_for_status()
        for host, port in sorted(instances):
            created = await client.post(
                "/api/connections",
                json={"source": "push", "name": f"{host}:{port}", "host": host, "port": port},
            )
            created.raise_for_status()
        features: Features = app.state.features
        await features.metrics_receiver.refresh()
        yield features, client


async def rate(
    send: Callable[[], Awaitable[None]], points: int, seconds: float
) -> tuple[float, float, int]:
    """(points/s by wall clock, by CPU time, requests) sending for about `seconds`."""
    await send()  # warm: first-request allocations, caches
    requests = 0
    wall, cpu = time.perf_counter(), time.process_time()
    while time.perf_counter() - wall < seconds:
        await send()
        requests += 1
        # Give the loop to what the request scheduled (event consumers: readings to
        # webhooks, detectors) inside the window, as a server between requests would.
        await asyncio.sleep(0)
    for _ in range(3):  # let anything the requests scheduled run inside the window
        await asyncio.sleep(0)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return points * requests / wall, points * requests / cpu, requests


async def bench_points(args: argparse.Namespace) -> None:
    size = args.payload_bytes
    payloads = [
        build_payload("many instances", Encoding.PROTOBUF, wide=False, target_bytes=size),
        build_payload("many instances", Encoding.JSON, wide=False, target_bytes=size),
        build_payload("wide instances", Encoding.PROTOBUF, wide=True, target_bytes=size),
        build_payload("wide instances", Encoding.JSON, wide=True, target_bytes=size),
    ]
    everyone = {address for payload in payloads for address in payload.instances}
    cpu = sorted(os.sched_getaffinity(0))[0]
    os.sched_setaffinity(0, {cpu})
    print(f"points: one core (CPU {cpu}), {len(everyone)} push connections registered")
    async with in_process_monitor(everyone) as (features, client):
        receiver = features.metrics_receiver
        for payload in payloads:
            kind = "protobuf" if payload.encoding is Encoding.PROTOBUF else "JSON"
            print(
                f"  {payload.name}, {kind}: {len(payload.body):,} bytes, "
                f"{len(payload.instances)} instances, {payload.points:,} points"
            )
            before = receiver.counts.accepted

            async def decode_and_map(payload: Payload = payload) -> None:
                message = decode(payload.body, ExportMetricsServiceRequest, payload.encoding)
                response = await receiver.ingest(message)
                assert not response.HasField("partial_success"), response

            per_s, per_cpu_s, requests = await rate(decode_and_map, payload.points, args.seconds)
            assert receiver.counts.accepted - before == payload.points * (requests + 1)
            target = f"  (target {POINTS_TARGET:,}/s)" if kind == "protobuf" else ""
            print(
                f"    decode+map:          {per_s:>10,.0f} points/s"
                f"  ({per_cpu_s:,.0f}/CPU-s, {requests} requests){target}"
            )
            if args.profile and kind == "protobuf":
                await profile(decode_and_map, payload.name)
            codings = ["identity", "gzip"] if kind == "protobuf" else ["identity"]
            for coding in codings:
                body = gzip.compress(payload.body, 6) if coding == "gzip" else payload.body
                headers = {"content-type": payload.encoding.value, "content-encoding": coding}

                async def post(body: bytes = body, headers: dict[str, str] = headers) -> None:
                    answer = await client.post(METRICS, content=body, headers=headers)
                    assert answer.status_code == 200, answer.text

                per_s, per_cpu_s, requests = await rate(post, payload.points, args.seconds)
                label = f"through HTTP ({coding}):"
                print(
                    f"    {label:<21}{per_s:>10,.0f} points/s"
                    f"  ({per_cpu_s:,.0f}/CPU-s, {requests} requests)"
                )
    os.sched_setaffinity(0, set(range(os.cpu_count() or 1)))


async def profile(send: Callable[[], Awaitable[None]], name: str) -> None:
    """cProfile of 20 requests: the top costs by own time."""
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(20):
        await send()
    profiler.disable()
    print(f"    profile of 20 requests ({name}), by own time:")
    stats = pstats.Stats(profiler, stream=sys.stdout)
    stats.sort_stats("tottime").print_stats(18)


# --- spans ---


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def span_template() -> tuple[bytes, list[bytes]]:
    """A 100-span export (10 traces of 10 spans) and the trace-id placeholders in it."""
    request = ExportTraceServiceRequest()
    resource_spans = request.resource_spans.add()
    resource_spans.resource.attributes.add(key="service.name").value.string_value = "bench-app"
    scope = resource_spans.scope_spans.add()
    scope.scope.name = "@svc/bench"
    now_ns = time.time_ns()
    placeholders = []
    for t in range(10):
        trace_id = bytes([0xA0 + t]) * 16
        placeholders.append(trace_id)
        for s in range(10):
            span = scope.spans.add(
                trace_id=trace_id,
                span_id=bytes([t + 1, s + 1]) * 4,
                name=f"GET /api/item/{s}",
                kind=2 if s == 0 else 3,
                start_time_unix_nano=now_ns + s * 1000,
                end_time_unix_nano=now_ns + s * 1000 + 250_000,
            )
            if s:
                span.parent_span_id = bytes([t + 1, 1]) * 4
            span.attributes.add(key="http.method").value.string_value = "GET"
            span.attributes.add(key="db.system.name").value.string_value = "valkey"
            span.attributes.add(key="db.operation.name").value.string_value = "GET"
            span.status.code = Status.STATUS_CODE_OK
    return request.SerializeToString(), placeholders


def fresh_spans(template: bytes, placeholders: list[bytes]) -> bytes:
    body = template
    for placeholder in placeholders:
        body = body.replace(placeholder, os.urandom(16))
    return body


async def bench_spans(args: argparse.Namespace) -> None:
    template, placeholders = span_template()
    with tempfile.TemporaryDirectory(prefix="svc-bench-spans-") as data:
        valkey = EmbeddedValkey()
        valkey.start()
        port = free_port()
        database = Path(data) / "svc.db"
        env = {
            **os.environ,
            "PORT": str(port),
            "BIND_HOST": "127.0.0.1",
            "STORAGE_TYPE": "sqlite",
            "STORAGE_SQLITE_FILEPATH": str(database),
            "DB_HOST": "127.0.0.1",
            "DB_PORT": str(valkey.port),
            "ENTITLEMENT_URL": NOWHERE,
            "RELEASES_URL": NOWHERE,
            "SVC_DATA_DIR": data,
            "LOG_LEVEL": "warning",
            "WORKSPACE_DISABLED": "true",
        }
        command = [sys.executable, "-m", "svc_monitor", "serve"]
        server = await asyncio.create_subprocess_exec(*command, env=env, cwd=data)
        base_url = f"http://127.0.0.1:{port}"
        try:
            async with httpx.AsyncClient(
                base_url=base_url, limits=httpx.Limits(max_connections=args.clients)
            ) as client:
                await wait_until_up(client, server)
                server_cpu, client_cpu = cpu_seconds(server.pid), time.process_time()
                stored, elapsed, refused = await post_spans(client, args, template, placeholders)
                server_cpu = cpu_seconds(server.pid) - server_cpu
                client_cpu = time.process_time() - client_cpu
            rows = count_rows(database)
        finally:
            server.terminate()
            try:
                await asyncio.wait_for(server.wait(), 20)
            except TimeoutError:
                server.kill()
                await server.wait()
            valkey.stop()
    print(
        f"spans: svc-monitor serve (sqlite), {args.clients} concurrent clients, "
        f"100-span protobuf requests, {elapsed:.1f} s"
    )
    print(f"  spans stored/s:      {stored / elapsed:>10,.0f}  (target {SPANS_TARGET:,}/s)")
    print(f"  spans answered 200:  {stored:>10,}  refused (503, retried): {refused}")
    print(f"  rows in sqlite:      {rows:>10,}")
    print(
        f"  server CPU:          {server_cpu / elapsed:>10.2f} cores"
        f"  ({stored / server_cpu:,.0f} spans per server CPU-s);"
        f" clients {client_cpu / elapsed:.2f} cores, machine has {os.cpu_count()}"
    )


async def wait_until_up(client: httpx.AsyncClient, server: asyncio.subprocess.Process) -> None:
    for _ in range(600):  # bounded: 60 s
        if server.returncode is not None:
            raise RuntimeError(f"svc-monitor serve exited with {server.returncode}")
        with contextlib.suppress(httpx.HTTPError):
            answer = await client.post(
                TRACES, content=b"", headers={"content-type": "application/x-protobuf"}
            )
            if answer.status_code == 200:
                return
        await asyncio.sleep(0.1)
    raise RuntimeError("svc-monitor serve did not answer /v1/traces within 60 s")


async def post_spans(
    client: httpx.AsyncClient, args: argparse.Namespace, template: bytes, ids: list[bytes]
) -> tuple[int, float, int]:
    headers = {"content-type": "application/x-protobuf"}
    stored = refused = 0
    deadline = time.perf_counter() + args.spans_seconds

    async def one_client() -> None:
        nonlocal stored, refused
        while time.perf_counter() < deadline:
            answer = await client.post(TRACES, content=fresh_spans(template, ids), headers=headers)
            if answer.status_code == 503:
                refused += 1
                await asyncio.sleep(0.05)
                continue
            assert answer.status_code == 200, answer.text
            assert answer.content == b"", answer.content  # full success: nothing rejected
            stored += 100

    started = time.perf_counter()
    await asyncio.gather(*(one_client() for _ in range(args.clients)))
    return stored, time.perf_counter() - started, refused


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process and its threads (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def count_rows(database: Path) -> int:
    with contextlib.closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True)) as db:
        (count,) = db.execute("SELECT count(*) FROM trace_spans").fetchone()
    return int(count)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="per points figure")
    parser.add_argument("--spans-seconds", type=float, default=10.0)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--only", choices=["points", "spans"])
    parser.add_argument("--profile", action="store_true", help="cProfile the protobuf path")
    parser.add_argument("--quick", action="store_true", help="tiny sizes; its figures mean nothing")
    args = parser.parse_args()
    args.payload_bytes = TARGET_BYTES
    if args.quick:
        args.seconds, args.spans_seconds, args.payload_bytes = 0.2, 0.5, 128 * 1024
    if args.only != "spans":
        uvloop.run(bench_points(args))
    if args.only != "points":
        uvloop.run(bench_spans(args))


if __name__ == "__main__":
    main()
