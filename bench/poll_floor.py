"""The floor under the cost of watching: what reading INFO from N servers every second
costs before any of svc-monitor's own work.

Starts N real Valkey servers on loopback as bench/poll_fanout.py does, and over one
connection to each asks plain `INFO` about once a second (the default INFO interval, with
the same 10 % jitter), on the same event loop (uvloop), in three ways:

  - raw: the round trip only (write the command, read the bulk reply), under a timeout;
  - parse: the same, and the reply parsed by our INFO parser with the thirty field reads
    an observation's consumers make at the least;
  - bytes: how many bytes each server returns per minute, and the size of each section.

No storage, no detection, no history: whatever poll_fanout.py measures above these
figures is ours to cut; below them nothing can go without reading INFO less often or
reading fewer sections of it.

    .venv/bin/python bench/poll_floor.py [--servers 100] [--seconds 60] [--quick]
"""

import argparse
import asyncio
import platform
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import uvloop

from _servers import Server, start_servers, stop_servers
from svc_monitor.engine.info import parse_info

INFO = b"*1\r\n$4\r\nINFO\r\n"
# Reads an observation's consumers make on every pass (live state, the readings, history).
FIELDS = [
    ("memory", "used_memory"),
    ("memory", "maxmemory"),
    ("memory", "maxmemory_policy"),
    ("memory", "used_memory_rss"),
    ("memory", "mem_fragmentation_ratio"),
    ("clients", "connected_clients"),
    ("clients", "blocked_clients"),
    ("clients", "maxclients"),
    ("cpu", "used_cpu_sys"),
    ("cpu", "used_cpu_user"),
    ("stats", "instantaneous_ops_per_sec"),
    ("stats", "keyspace_hits"),
    ("stats", "keyspace_misses"),
    ("stats", "total_commands_processed"),
    ("stats", "evicted_keys"),
    ("stats", "expired_keys"),
    ("stats", "rejected_connections"),
    ("stats", "total_net_input_bytes"),
    ("stats", "total_net_output_bytes"),
    ("replication", "role"),
    ("replication", "connected_slaves"),
    ("server", "redis_version"),
    ("server", "uptime_in_seconds"),
    ("persistence", "rdb_changes_since_last_save"),
    ("persistence", "aof_enabled"),
    ("memory", "used_memory_peak"),
    ("memory", "used_memory_lua"),
    ("clients", "client_recent_max_input_buffer"),
    ("stats", "total_connections_received"),
    ("stats", "sync_full"),
]


def _observe(reply: bytes) -> None:
    info = parse_info(reply)
    for section, field in FIELDS:
        info.get(section, field)


def _nothing(reply: bytes) -> None:
    return None


async def _watch(port: int, until: float, handle: Callable[[bytes], None]) -> int:
    """Ask INFO about once a second until `until`; the bytes returned."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    received = 0
    try:
        while time.monotonic() < until:
            async with asyncio.timeout(5):
                writer.write(INFO)
                header = await reader.readline()
                body = await reader.readexactly(int(header[1:]) + 2)
            received += len(header) + len(body)
            handle(body[:-2])
            await asyncio.sleep(random.uniform(0.9, 1.1))
    finally:
        writer.close()
    return received


async def measure(servers: list[Server], seconds: float, handle: Callable[[bytes], None]) -> None:
    until = time.monotonic() + seconds
    cpu, wall = time.process_time(), time.perf_counter()
    received = await asyncio.gather(*(_watch(s.port, until, handle) for s in servers))
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    name = "parse" if handle is _observe else "raw"
    print(
        f"  {name:<5} {cpu / wall * 60:.2f} CPU-s/min ({cpu / wall * 100:.1f} % of a core), "
        f"{statistics.median(received) / 1024 / (wall / 60):.0f} KB returned per server "
        "per minute"
    )


async def section_sizes(server: Server) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    writer.write(INFO)
    header = await reader.readline()
    text = (await reader.readexactly(int(header[1:]) + 2)).decode()
    writer.close()
    sizes: dict[str, int] = {}
    section = ""
    for line in text.split("\r\n"):
        if line.startswith("#"):
            section = line[1:].strip()
        if section:
            sizes[section] = sizes.get(section, 0) + len(line) + 2
    print(
        f"  INFO reply {len(text)} bytes: "
        + ", ".join(f"{name} {size}" for name, size in sorted(sizes.items(), key=lambda s: -s[1]))
    )


async def run(servers: list[Server], seconds: float) -> None:
    print(f"{len(servers)} servers, INFO every second for {seconds:.0f} s ({platform.node()})")
    await section_sizes(servers[0])
    for handle in (_nothing, _observe):
        await measure(servers, seconds, handle)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--servers", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--quick", action="store_true", help="5 servers for 3 s")
    args = parser.parse_args()
    if args.quick:
        args.servers, args.seconds = 5, 3.0
    with tempfile.TemporaryDirectory(prefix="poll-floor-") as workdir:
        servers = start_servers(args.servers, Path(workdir))
        try:
            uvloop.run(run(servers, args.seconds))
        finally:
            stop_servers(servers)


if __name__ == "__main__":
    main()
