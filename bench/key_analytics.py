"""Key analytics: what a run costs the server, as other clients see it.

Starts a real Valkey on a free loopback port, loads 100,000 keys in 5 patterns
(pipelined), then measures the server's latency from a separate process (PING round
trips every 0.5 ms on its own connection, so neither our event loop nor the GIL is in
its timings): first with the server idle, then while key analytics runs back to back
(the sampler exactly as the service runs it: SCAN, then TYPE/PTTL/MEMORY USAGE pipelined
and paced). Prints p50/p99/max before and during, and the runs' own figures. Target:
p99 during the scan under 2 ms.

With --unpaced it also runs the same scan with pacing off (no pauses, one pipeline per
SCAN batch), to show what the pacing buys. --quick loads 5,000 keys and samples for half
a second: it checks that the bench runs, its figures mean nothing.

    .venv/bin/python bench/key_analytics.py [--seconds 5] [--sample 10000] [--unpaced] [--quick]
"""

import argparse
import asyncio
import multiprocessing
import socket
import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import valkey

from svc_monitor.engine import pacing
from svc_monitor.engine.client import EngineClient, EngineTarget
from svc_monitor.key_analytics import sampler as sampler_module
from svc_monitor.key_analytics.sampler import Sampler
from svc_monitor.key_analytics.summary import summarise
from svc_monitor.kit.embedded_valkey import EmbeddedValkey

KEYS_PER_PATTERN = 20_000
PING_EVERY_S = 0.0005


def load(port: int, keys_per_pattern: int) -> None:
    client = valkey.Valkey(port=port)
    for start in range(0, keys_per_pattern, 5_000):
        pipe = client.pipeline(transaction=False)
        for i in range(start, min(start + 5_000, keys_per_pattern)):
            pipe.set(f"user:{i}", "u" * (10 + i % 40))
            pipe.hset(f"session:{i:032x}", mapping={"uid": i, "ip": "10.0.0.1"})
            pipe.set(f"cache:page:{i}", "p" * (200 + i % 300))
            pipe.rpush(f"queue:{i}:jobs", *[f"job-{j}" for j in range(1 + i % 5)])
            pipe.zadd(f"score:{i}", {f"m{j}": j for j in range(1 + i % 3)})
        pipe.execute()  # type: ignore[no-untyped-call]
    client.close()  # type: ignore[no-untyped-call]


def pinger(
    port: int, seconds: float, out: "multiprocessing.Queue[list[float]]", stop: Any = None
) -> None:
    """PING round trips in ms on a raw socket, one every PING_EVERY_S, for `seconds` or
    until `stop` (a multiprocessing.Event) is set."""
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    timings: list[float] = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end and not (stop is not None and stop.is_set()):
        started = time.perf_counter()
        sock.sendall(b"PING\r\n")
        reply = b""
        while not reply.endswith(b"\r\n"):
            reply += sock.recv(64)
        timings.append((time.perf_counter() - started) * 1000)
        time.sleep(PING_EVERY_S)
    sock.close()
    out.put(timings)


@dataclass
class Latency:
    p50: float
    p99: float
    max: float
    pings: int
    over_1ms: int

    def __str__(self) -> str:
        return (
            f"p50 {self.p50:.3f} ms  p99 {self.p99:.3f} ms  max {self.max:.3f} ms"
            f"  ({self.pings} PINGs, {self.over_1ms} over 1 ms)"
        )


def latency(timings: list[float]) -> Latency:
    cuts = statistics.quantiles(timings, n=100, method="inclusive")
    slow = sum(t > 1.0 for t in timings)
    return Latency(cuts[49], cuts[98], max(timings), len(timings), slow)


@contextmanager
def pinging(port: int, seconds: float) -> Iterator["multiprocessing.Queue[list[float]]"]:
    out: multiprocessing.Queue[list[float]] = multiprocessing.Queue()
    process = multiprocessing.Process(target=pinger, args=(port, seconds, out))
    process.start()
    time.sleep(0.2)  # the pinger's connection is up before the measured work starts
    try:
        yield out
    finally:
        process.join(timeout=seconds + 10)


async def scan_for(port: int, seconds: float, sample: int) -> list[str]:
    """Back-to-back runs for `seconds`; one line of figures per run."""
    client = EngineClient(EngineTarget("127.0.0.1", port), connect_timeout_s=3, command_timeout_s=5)
    cursor = 0

    async def keep(value: int) -> None:
        nonlocal cursor
        cursor = value

    lines = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        started = time.perf_counter()
        run = await Sampler(
            client,
            sample_size=sample,
            batch_size=1000,
            with_freq=False,
            budget_s=60,
            save_cursor=keep,
        ).run(cursor)
        figures = summarise(run.samples, keyspace_keys=int(await client.execute("DBSIZE")))
        took = time.perf_counter() - started
        lines.append(
            f"  run: {len(run.samples):,} keys in {took * 1000:,.0f} ms "
            f"({len(run.samples) / took:,.0f} keys/s; {run.paused_s * 1000:,.0f} ms paused, "
            f"{run.round_trips} round trips), {len(figures.patterns)} patterns"
        )
    await client.close()
    return lines


def measure(port: int, seconds: float, sample: int) -> tuple[Latency, list[str]]:
    with pinging(port, seconds + 0.5) as out:
        lines = asyncio.run(scan_for(port, seconds, sample))
        timings = out.get(timeout=seconds + 10)
    return latency(timings), lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--sample", type=int, default=10_000)
    parser.add_argument("--unpaced", action="store_true")
    parser.add_argument("--quick", action="store_true", help="tiny sizes; its figures mean nothing")
    args = parser.parse_args()
    keys_per_pattern = KEYS_PER_PATTERN
    if args.quick:
        args.seconds, args.sample, keys_per_pattern = 0.5, 500, 1_000
    server = EmbeddedValkey()
    server.start()
    try:
        started = time.perf_counter()
        load(server.port, keys_per_pattern)
        keys = keys_per_pattern * 5
        print(f"loaded {keys:,} keys in {time.perf_counter() - started:.1f} s")
        with pinging(server.port, args.seconds) as out:
            idle = latency(out.get(timeout=args.seconds + 10))
        print(f"idle server:          {idle}")
        during, lines = measure(server.port, args.seconds, args.sample)
        print(f"during key analytics: {during}")
        print("\n".join(lines[:3] + (["  ..."] if len(lines) > 3 else [])))
        if args.unpaced:
            pacing.PACE_FACTOR = 0.0
            pacing.MIN_PAUSE_S = 0.0
            sampler_module.PIPELINE_KEYS = 1000
            unpaced, lines = measure(server.port, args.seconds, args.sample)
            print(f"unpaced (for contrast): {unpaced}")
            print("\n".join(lines[:3] + (["  ..."] if len(lines) > 3 else [])))
        verdict = "met" if during.p99 < 2.0 else "MISSED"
        print(f"target p99 < 2 ms during the scan: {verdict} ({during.p99:.3f} ms)")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
