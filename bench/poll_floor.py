"""The floor under the cost of watching: what reading INFO from N servers every second
costs before any of svc-monitor's own work.

The floor is defined once, here, as: one process on uvloop, one asyncio stream per server
(asyncio.open_connection to 127.0.0.1), each sending plain `INFO` about once a second (a
random.uniform(0.9, 1.1) s sleep between round trips, the default INFO interval with its
10 % jitter), reading the bulk reply, and splitting it into sections and fields with plain
Python (lines on "\\r\\n"; a line starting with "#" starts a section; any other line is
split on its first ":" into a name and a value, kept in a dict per section). Nothing else:
not our INFO parser, no field reads, no storage, no detection, no history. Connections are
opened before the clock starts and closed after it stops; CPU is time.process_time() (every
thread of the process) over wall time.

bench/poll_fanout.py measures the floor with measure_floor() on the same servers, in the
same process, once the service has stopped, and prints the service's CPU as a multiple of
it. Run on its own, this script starts N real Valkey servers on loopback as poll_fanout.py
does and prints, one window each:

  - floor: as defined above;
  - raw: the round trip only (write the command, read the bulk reply), for context;
  - ours: the round trip, then the reply parsed by our INFO parser
    (svc_monitor.engine.info.parse_info) and the thirty field reads an observation's
    consumers make at the least;

each as CPU-s/min, % of a core and KB returned per server per minute, after the size of
the INFO reply and of each of its sections. Whatever poll_fanout.py measures above the
floor is ours to cut; below it nothing can go without reading INFO less often or reading
fewer sections of it.

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
from dataclasses import dataclass
from pathlib import Path

import uvloop

from _servers import start_servers, stop_servers
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
# Only so that a server that stops answering fails the bench rather than hanging it: one
# deadline over the whole window, not a timer per round trip, which the floor does not have.
GRACE_S = 30.0

Handle = Callable[[bytes], object]


@dataclass(frozen=True)
class FloorResult:
    """What one window of INFO polling cost."""

    cpu_s_per_min: float  # time.process_time() of the whole process, per wall minute
    percent_of_core: float
    kb_returned_per_server_per_min: float  # median over servers
    wall_s: float  # the window's length


def split_info(reply: bytes) -> dict[str, dict[str, str]]:
    """The floor's parse: sections of name -> value, nothing more."""
    sections: dict[str, dict[str, str]] = {}
    fields: dict[str, str] = {}  # lines before the first "#" header, if any: dropped
    for line in reply.decode().split("\r\n"):
        if line.startswith("#"):
            fields = sections[line[1:].strip()] = {}
        elif line:
            name, _, value = line.partition(":")
            fields[name] = value
    return sections


def _observe(reply: bytes) -> None:
    info = parse_info(reply)
    for section, field in FIELDS:
        info.get(section, field)


def _nothing(reply: bytes) -> None:
    return None


Stream = tuple[asyncio.StreamReader, asyncio.StreamWriter]


async def _watch(stream: Stream, until: float, handle: Handle, slot: float | None) -> int:
    """Ask INFO about once a second until `until`; the bytes returned. With `slot` (a share
    of the second), each read falls on that slot of a grid every stream shares, as the
    service's passes do (polling/loop.py SLOTS); without, a second apart with 10 % jitter."""
    reader, writer = stream
    received = 0
    while time.monotonic() < until:
        writer.write(INFO)
        header = await reader.readline()
        if not header.startswith(b"$"):
            raise RuntimeError(f"INFO answered {header!r}")
        body = await reader.readexactly(int(header[1:]) + 2)
        received += len(header) + len(body)
        handle(body[:-2])
        if slot is None:
            await asyncio.sleep(random.uniform(0.9, 1.1))
        else:
            await asyncio.sleep(1.0 - ((time.monotonic() - slot) % 1.0))
    return received


async def _measure(ports: list[int], seconds: float, handle: Handle, slots: int = 0) -> FloorResult:
    streams = await asyncio.gather(*(asyncio.open_connection("127.0.0.1", p) for p in ports))
    try:
        async with asyncio.timeout(seconds + GRACE_S):
            until = time.monotonic() + seconds
            cpu, wall = time.process_time(), time.perf_counter()
            received = await asyncio.gather(
                *(
                    _watch(s, until, handle, i % slots / slots if slots else None)
                    for i, s in enumerate(streams)
                )
            )
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    finally:
        for _, writer in streams:
            writer.close()
        await asyncio.gather(*(w.wait_closed() for _, w in streams), return_exceptions=True)
    return FloorResult(
        cpu_s_per_min=cpu / wall * 60,
        percent_of_core=cpu / wall * 100,
        kb_returned_per_server_per_min=statistics.median(received) / 1024 / (wall / 60),
        wall_s=wall,
    )


async def measure_floor(ports: list[int], seconds: float, slots: int = 0) -> FloorResult:
    """The floor (see the module's docstring) over `seconds`, on the running event loop;
    with `slots`, its reads on that many slots a second."""
    return await _measure(ports, seconds, split_info, slots)


async def section_sizes(port: int) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
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


def _line(name: str, result: FloorResult, what: str) -> str:
    return (
        f"  {name:<5} {result.cpu_s_per_min:.2f} CPU-s/min ({result.percent_of_core:.1f} % of "
        f"a core), {result.kb_returned_per_server_per_min:.0f} KB returned per server per "
        f"minute: {what}"
    )


async def run(ports: list[int], seconds: float, slots: int) -> None:
    print(f"{len(ports)} servers, INFO every second for {seconds:.0f} s ({platform.node()})")
    await section_sizes(ports[0])
    print(_line("floor", await measure_floor(ports, seconds), "split into sections and fields"))
    if slots:
        slotted = await measure_floor(ports, seconds, slots)
        print(_line("slots", slotted, f"the floor, its reads on {slots} slots a second"))
    print(_line("raw", await _measure(ports, seconds, _nothing), "the round trip only"))
    print(
        _line(
            "ours",
            await _measure(ports, seconds, _observe),
            f"parsed by svc_monitor.engine.info and {len(FIELDS)} fields read",
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--servers", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument(
        "--slots", type=int, default=0, help="also measure the floor on this many slots a second"
    )
    parser.add_argument("--quick", action="store_true", help="5 servers for 3 s")
    args = parser.parse_args()
    if args.quick:
        args.servers, args.seconds = 5, 3.0
    with tempfile.TemporaryDirectory(prefix="poll-floor-") as workdir:
        servers = start_servers(args.servers, Path(workdir))
        try:
            uvloop.run(run([s.port for s in servers], args.seconds, args.slots))
        finally:
            stop_servers(servers)


if __name__ == "__main__":
    main()
