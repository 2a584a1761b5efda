"""The cost of watching: what polling N real Valkey servers costs us and each server.

Starts N real Valkey servers on loopback (`--hz 1 --save ''`, as idle production servers
look to us), registers them all with one in-process svc-monitor (memory storage, every
setting at its default), lets it poll for a while (default 3 minutes) and prints:

  - CPU-seconds per minute of the whole process (every thread), and its RSS;
  - ticks: passes made, and how many started over 10 % of their interval late;
  - the longest single step of the event loop (a probe that asks to wake every 10 ms);
  - commands and bytes per minute each server received from us and sent back, read from
    the server's own INFO stats and commandstats (median over servers, by command);
  - the floor (bench/poll_floor.py: INFO every second over one stream per server, each
    reply split into sections and fields, nothing else), measured once the service's
    lifespan has ended and it polls no more, on the same servers in the same process for
    --floor-seconds (default 60), and the service's CPU as a multiple of it.

    .venv/bin/python bench/poll_fanout.py [--servers 100 1000] [--seconds 180]
        [--floor-seconds 60] [--quick]

Targets: 100 servers: the whole service at most 2x the floor measured in the same run, RSS
under 110 MB; 1,000 servers: 0 late ticks, under half a core (30 CPU-s/min); at most 280
KB returned and 80 commands per server per minute at the defaults.
"""

import argparse
import asyncio
import gc
import platform
import statistics
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import httpx
import psutil
import uvloop

from _servers import LoopLag, Server, ServerCounts, read_counts, start_servers, stop_servers
from poll_floor import measure_floor
from svc_monitor.app import create_app
from svc_monitor.config import Settings, StorageType
from svc_monitor.services import Services

NOWHERE = "http://127.0.0.1:9"  # the update check must not leave loopback


def _read_all(servers: list[Server]) -> list[ServerCounts]:
    return [read_counts(s.port) for s in servers]


async def run(servers: list[Server], seconds: float, floor_seconds: float) -> None:
    service_cpu = await watch(servers, seconds)
    # The service has stopped: its lifespan is over, its app out of reach. What it leaves
    # (its modules, still imported) is frozen out of the collector's sight for the floor,
    # as a process that never loaded them would not walk them.
    others = asyncio.all_tasks() - {asyncio.current_task()}
    if others:
        print(f"  note: {len(others)} tasks still running while the floor is measured")
    gc.collect()
    gc.freeze()
    try:
        floor = await measure_floor([s.port for s in servers], floor_seconds)
    finally:
        gc.unfreeze()
    times = f"{service_cpu / floor.cpu_s_per_min:.1f}x" if floor.cpu_s_per_min else "n/a"
    print(
        f"  floor (INFO every second, split into sections and fields): "
        f"{floor.cpu_s_per_min:.2f} CPU-s/min; the service is {times} the floor"
    )
    print(
        f"    the floor over {floor.wall_s:.0f} s: {floor.percent_of_core:.1f} % of a core, "
        f"{floor.kb_returned_per_server_per_min:.1f} KB returned per server per minute"
    )


async def watch(servers: list[Server], seconds: float) -> float:
    """Poll with the whole service for `seconds` and print what it cost; its CPU-s/min."""
    settings = Settings(
        _env_file=None,
        STORAGE_TYPE=StorageType.MEMORY,
        DB_HOST="127.0.0.1",
        DB_PORT=servers[0].port,
        ENTITLEMENT_URL=NOWHERE,
        RELEASES_URL=NOWHERE,
        LOG_LEVEL="warning",
        WORKSPACE_DISABLED=True,  # the bench calls the API without signing in
    )
    app = create_app(settings, freeze_heap=True)  # as the command line runs it
    services: Services = app.state.services
    transport = httpx.ASGITransport(app=app)
    process = psutil.Process()
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://bench") as client,
    ):
        for server in servers[1:]:
            response = await client.post(
                "/api/connections",
                json={"name": f"v{server.port}", "host": "127.0.0.1", "port": server.port},
            )
            if response.status_code != 201:
                raise RuntimeError(f"adding a connection: {response.status_code} {response.text}")
        polls = services.live_state.polls
        connections = await services.connections.list()
        # Every connection past its first (detecting) pass before the window opens.
        deadline = time.monotonic() + 30 + len(servers) / 20
        while _passes(polls.passes, "info") < len(connections):
            if time.monotonic() > deadline:
                raise RuntimeError("not every server was polled within the warm-up")
            await asyncio.sleep(0.5)
        await asyncio.sleep(2)

        lag = LoopLag()
        lag_task = asyncio.create_task(lag.run())
        pauses = GcPauses()
        gc.callbacks.append(pauses)
        # Read in a worker thread: a thousand blocking reads on the loop would hold it for
        # most of a second and make the polls due meanwhile late by the bench's doing.
        before = await asyncio.to_thread(_read_all, servers)
        passes_before = dict(polls.passes)
        late_before = dict(polls.late)
        cpu, wall = time.process_time(), time.perf_counter()
        times_before, loop_before = process.cpu_times(), _loop_thread_cpu(process)
        rss_peak = 0
        end = wall + seconds
        while (left := end - time.perf_counter()) > 0:
            await asyncio.sleep(min(1.0, left))
            rss_peak = max(rss_peak, process.memory_info().rss)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        times_after, loop_cpu = process.cpu_times(), _loop_thread_cpu(process) - loop_before
        passes = {k: n - passes_before.get(k, 0) for k, n in polls.passes.items()}
        late = {k: n - late_before.get(k, 0) for k, n in polls.late.items()}
        gc.callbacks.remove(pauses)
        lag.stop()
        await lag_task
        after = await asyncio.to_thread(_read_all, servers)

    minutes = wall / 60
    print(f"{len(servers)} servers, {wall:.0f} s at default settings ({platform.node()})")
    print(
        f"  CPU {cpu / minutes:.2f} CPU-s/min ({cpu / wall * 100:.1f} % of a core), "
        f"RSS {process.memory_info().rss / 2**20:.0f} MB (peak {rss_peak / 2**20:.0f} MB)"
    )
    user = times_after.user - times_before.user
    system = times_after.system - times_before.system
    print(
        f"  of which user {user / minutes:.2f}, system {system / minutes:.2f}; "
        f"the event loop's thread {loop_cpu / minutes:.2f} CPU-s/min"
    )
    kinds = sorted({kind for _, kind, _ in passes})
    ticks = {kind: _passes(passes, kind) for kind in kinds}
    failed = sum(n for (_, _, ok), n in passes.items() if not ok)
    print(
        f"  ticks {sum(ticks.values())} ({failed} failed), late {sum(late.values())}: "
        + ", ".join(f"{kind} {ticks[kind]}/{late.get(kind, 0)} late" for kind in kinds)
    )
    lags = sorted(lag.lags_ms)
    print(
        f"  event loop lag: p50 {statistics.median(lags):.1f} ms, "
        f"p99 {lags[int(len(lags) * 0.99)]:.1f} ms, longest {lags[-1]:.1f} ms"
    )
    print(
        "  garbage collector: "
        + ", ".join(
            f"gen{g} {pauses.count[g]}x (longest {pauses.longest_ms[g]:.1f} ms)" for g in range(3)
        )
        + f", {sum(pauses.total_ms.values()) / minutes:.0f} ms a minute in all"
    )
    # Each server over the time between its own two reads: reading a thousand servers
    # takes a while, and polling goes on meanwhile.
    sent: list[Counter[str]] = []
    spans = [(a.at - b.at) / 60 for b, a in zip(before, after, strict=True)]
    for b, a in zip(before, after, strict=True):
        counts = a.commands - b.commands
        counts["info"] -= 1  # the bench's own read that took `before`
        sent.append(counts)
    per_server = [sum(c.values()) / span for c, span in zip(sent, spans, strict=True)]
    out_kb = [
        (a.bytes_out - b.bytes_out - b.probe_reply) / 1024 / span
        for b, a, span in zip(before, after, spans, strict=True)
    ]
    in_kb = [
        (a.bytes_in - b.bytes_in) / 1024 / span
        for b, a, span in zip(before, after, spans, strict=True)
    ]
    print(
        f"  per server per minute (median): {statistics.median(per_server):.1f} commands, "
        f"{statistics.median(out_kb):.1f} KB returned, {statistics.median(in_kb):.1f} KB sent"
    )
    names = {name for counts in sent for name in counts}
    per_command = {
        n: statistics.median(c[n] / span for c, span in zip(sent, spans, strict=True))
        for n in names
    }
    for name, rate in sorted(per_command.items(), key=lambda kv: -kv[1]):
        if rate > 0:
            print(f"    {name:<28} {rate:7.1f}/min")
    return cpu / minutes


class GcPauses:
    """Each garbage collection during the window, by generation: how many, the longest (a
    collection holds the event loop for its whole length, and a long one makes ticks late)."""

    def __init__(self) -> None:
        self.count: Counter[int] = Counter()
        self.longest_ms: dict[int, float] = {0: 0.0, 1: 0.0, 2: 0.0}
        self.total_ms: dict[int, float] = {0: 0.0, 1: 0.0, 2: 0.0}
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
            return
        generation = info["generation"]
        took = (time.perf_counter() - self._started) * 1000
        self.count[generation] += 1
        self.longest_ms[generation] = max(self.longest_ms[generation], took)
        self.total_ms[generation] += took


def _loop_thread_cpu(process: psutil.Process) -> float:
    """CPU-seconds (user and system) of the thread running the event loop: this one."""
    loop_thread = threading.get_native_id()
    return next(t.user_time + t.system_time for t in process.threads() if t.id == loop_thread)


def _passes(passes: dict[tuple[str, str, bool], int], kind: str) -> int:
    return sum(n for (_, k, _), n in passes.items() if k == kind)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--servers", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--seconds", type=float, default=180.0)
    parser.add_argument("--floor-seconds", type=float, default=60.0)
    parser.add_argument(
        "--quick", action="store_true", help="5 servers for 10 s, the floor for 5 s"
    )
    args = parser.parse_args()
    if args.quick:
        args.servers, args.seconds, args.floor_seconds = [5], 10.0, 5.0
    for count in args.servers:
        with tempfile.TemporaryDirectory(prefix="poll-fanout-") as workdir:
            servers = start_servers(count, Path(workdir))
            try:
                # uvloop, as the service runs under uvicorn.
                uvloop.run(run(servers, args.seconds, args.floor_seconds))
            finally:
                stop_servers(servers)


if __name__ == "__main__":
    main()
