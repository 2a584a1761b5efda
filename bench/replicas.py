"""Replicas sharing the polling: what three cost against one carrying the whole fleet, and
how long a killed replica's connections go unpolled.

Starts N real Valkey servers on loopback (`--hz 1 --save ''`) and a PostgreSQL database of
its own on 127.0.0.1:5432, then runs real `svc-monitor serve` processes on it, every
setting at its default but the replica heartbeat and timeout given here:

  1. one replica polling all N: its CPU-seconds per minute and RSS, and INFO polls per
     second received by the servers (from their own commandstats);
  2. three replicas sharing the N: the same figures per replica, the spread of what each
     holds, and the three together against the one (the target: within 15 %);
  3. takeover, several times: one replica SIGKILLed, and the time until every server it
     polled (a sample of them) has received an INFO from another replica; the target is
     under two INFO intervals plus REPLICA_TIMEOUT_MS. A new replica then takes its place.

    .venv/bin/python bench/replicas.py [--servers 900] [--seconds 60] [--kills 5] [--quick]
"""

import argparse
import asyncio
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import asyncpg
import httpx
import psutil

from _servers import Server, free_port, read_counts, start_servers, stop_servers

PG_ADMIN = os.environ.get("SVC_BENCH_PG_ADMIN_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
NOWHERE = "http://127.0.0.1:9"
INFO_INTERVAL_S = 1.0  # the default ANOMALY_POLL_INTERVAL_MS
ADD_CONCURRENCY = 16
TAKEOVER_SAMPLE = 25  # servers of the killed replica watched for their first new INFO


@dataclass
class Replica:
    process: subprocess.Popen[bytes]
    url: str
    ps: psutil.Process

    @property
    def pid(self) -> int:
        return self.process.pid


def info_calls(port: int) -> int:
    """INFO calls the server has answered (this read counts once, after it)."""
    return read_counts(port).commands["info"]


@contextmanager
def database() -> Iterator[str]:
    name = f"svc_bench_{uuid.uuid4().hex[:8]}"

    async def admin(sql: str) -> None:
        conn = await asyncpg.connect(PG_ADMIN)
        try:
            await conn.execute(sql)
        finally:
            await conn.close()

    asyncio.run(admin(f'CREATE DATABASE "{name}"'))
    try:
        yield PG_ADMIN.rsplit("/", 1)[0] + f"/{name}"
    finally:
        asyncio.run(admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


class Fleet:
    """The replicas of one run, all on one database, each a process of its own."""

    def __init__(self, url: str, default: Server, workdir: Path, replica_env: dict[str, str]):
        self.url = url
        self.default = default
        self.workdir = workdir
        self.replica_env = replica_env
        self.replicas: list[Replica] = []

    def start(self) -> Replica:
        port = free_port()
        data = self.workdir / f"replica-{port}"
        data.mkdir()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("STORAGE_", "DB_"))}
        env.update(
            {
                "STORAGE_TYPE": "postgres",
                "STORAGE_URL": self.url,
                "DB_HOST": "127.0.0.1",
                "DB_PORT": str(self.default.port),
                "PORT": str(port),
                "BIND_HOST": "127.0.0.1",
                "ENTITLEMENT_URL": NOWHERE,
                "RELEASES_URL": NOWHERE,
                "SVC_DATA_DIR": str(data),
                "WORKSPACE_DISABLED": "true",
                "LOG_LEVEL": "warning",
                **self.replica_env,
            }
        )
        with (data / "out.log").open("wb") as log:
            process = subprocess.Popen(
                [str(Path(sys.executable).parent / "svc-monitor"), "serve"],
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        replica = Replica(process, f"http://127.0.0.1:{port}", psutil.Process(process.pid))
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"replica exited: {(data / 'out.log').read_text()[-2000:]}")
            try:
                if httpx.get(f"{replica.url}/api/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("a replica did not answer within 60 s")
            time.sleep(0.1)
        self.replicas.append(replica)
        return replica

    def stop(self, replica: Replica, sig: signal.Signals = signal.SIGTERM) -> None:
        if replica.process.poll() is None:
            replica.process.send_signal(sig)
            try:
                replica.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                replica.process.kill()
                replica.process.wait(timeout=10)
        self.replicas.remove(replica)

    def stop_all(self) -> None:
        for replica in list(self.replicas):
            self.stop(replica)

    def holdings(self) -> dict[str, set[str]]:
        """Live replica id -> the connection ids it holds, asked of any live replica."""
        got = httpx.get(f"{self.replicas[0].url}/api/replicas", timeout=10).json()
        return {r["id"]: set(r["ownedConnections"]) for r in got["replicas"] if r["live"]}

    def wait_balanced(self, connections: int, timeout_s: float = 120) -> dict[str, set[str]]:
        deadline = time.monotonic() + timeout_s
        while True:
            held = self.holdings()
            counts = sorted(len(v) for v in held.values())
            if (
                len(held) == len(self.replicas)
                and sum(counts) == connections
                and counts[-1] - counts[0] <= 1
            ):
                return held
            if time.monotonic() > deadline:
                raise RuntimeError(f"not balanced within {timeout_s:g} s: {counts}")
            time.sleep(0.25)


async def add_connections(api: str, servers: list[Server]) -> dict[str, int]:
    """Every server but the default through the API: connection id -> port."""
    limit = asyncio.Semaphore(ADD_CONCURRENCY)
    ids: dict[str, int] = {}
    async with httpx.AsyncClient(base_url=api, timeout=60) as client:
        (default,) = (await client.get("/api/connections")).json()
        ids[default["id"]] = servers[0].port

        async def add(index: int, server: Server) -> None:
            async with limit:
                answer = await client.post(
                    "/api/connections",
                    json={"name": f"s{index}", "host": "127.0.0.1", "port": server.port},
                )
                answer.raise_for_status()
                ids[answer.json()["id"]] = server.port

        await asyncio.gather(*(add(i, s) for i, s in enumerate(servers[1:], start=1)))
    return ids


def measure(replicas: list[Replica], servers: list[Server], seconds: float) -> dict[str, float]:
    """CPU-s/min and RSS of each replica, and INFO polls per second over all servers."""
    before_calls = sum(info_calls(s.port) for s in servers)
    before_cpu = [sum(r.ps.cpu_times()[:2]) for r in replicas]
    started = time.monotonic()
    time.sleep(seconds)
    span = time.monotonic() - started
    after_cpu = [sum(r.ps.cpu_times()[:2]) for r in replicas]
    after_calls = sum(info_calls(s.port) for s in servers)
    figures = {
        "polls_per_s": (after_calls - before_calls - len(servers)) / span,
        "cpu_total": sum(a - b for a, b in zip(after_cpu, before_cpu, strict=True)) * 60 / span,
    }
    for n, (replica, a, b) in enumerate(zip(replicas, after_cpu, before_cpu, strict=True)):
        figures[f"cpu_{n}"] = (a - b) * 60 / span
        figures[f"rss_{n}"] = replica.ps.memory_info().rss / 2**20
    return figures


def takeover(fleet: Fleet, ids: dict[str, int], bound_s: float) -> float:
    """Kill the replica holding the most; seconds until a sample of its servers each
    answered an INFO from another replica."""
    held = fleet.holdings()
    by_pid = {r.pid: r for r in fleet.replicas}
    victim_id = max(held, key=lambda rid: len(held[rid]))
    victim = next(r for pid, r in by_pid.items() if f"-{pid}-" in victim_id)
    ports = [ids[cid] for cid in sorted(held[victim_id])[:TAKEOVER_SAMPLE]]
    time.sleep(2 * INFO_INTERVAL_S)
    victim.process.send_signal(signal.SIGKILL)
    killed = time.monotonic()
    victim.process.wait(timeout=10)
    fleet.replicas.remove(victim)
    seen = {port: info_calls(port) + 1 for port in ports}  # +1: that read itself
    back: dict[int, float] = {}
    while len(back) < len(ports) and time.monotonic() - killed < 3 * bound_s:
        for port in ports:
            if port in back:
                continue
            calls = info_calls(port)
            if calls > seen[port]:
                back[port] = time.monotonic() - killed
            seen[port] = max(calls, seen[port]) + 1
        time.sleep(0.05)
    if len(back) < len(ports):
        raise RuntimeError(f"{len(ports) - len(back)} servers unpolled {3 * bound_s:g} s on")
    return max(back.values())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--servers", type=int, default=900)
    parser.add_argument("--seconds", type=float, default=60, help="each measuring window")
    parser.add_argument("--kills", type=int, default=5)
    parser.add_argument("--heartbeat-ms", type=int, default=2000)
    parser.add_argument("--timeout-ms", type=int, default=10000)
    parser.add_argument("--quick", action="store_true", help="6 servers, short windows")
    args = parser.parse_args()
    if args.quick:
        args.servers, args.seconds, args.kills = 6, 4, 1
        args.heartbeat_ms, args.timeout_ms = 250, 1000
    replica_env = {
        "REPLICA_HEARTBEAT_MS": str(args.heartbeat_ms),
        "REPLICA_TIMEOUT_MS": str(args.timeout_ms),
    }
    bound_s = args.timeout_ms / 1000 + 2 * INFO_INTERVAL_S
    print(f"replicas: {args.servers} Valkey servers, heartbeat {args.heartbeat_ms} ms, "
          f"timeout {args.timeout_ms} ms, {args.seconds:g} s windows")  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp, database() as url:
        workdir = Path(tmp)
        (workdir / "servers").mkdir()
        servers = start_servers(args.servers, workdir / "servers")
        fleet = Fleet(url, servers[0], workdir, replica_env)
        try:
            alone = fleet.start()
            ids = asyncio.run(add_connections(alone.url, servers))
            fleet.wait_balanced(len(ids))
            time.sleep(min(10.0, args.seconds))  # its first passes over, its heap settled
            one = measure([alone], servers, args.seconds)
            print(f"  one replica, {len(ids)} connections: {one['cpu_0']:.2f} CPU-s/min, "
                  f"RSS {one['rss_0']:.0f} MB, {one['polls_per_s']:.1f} INFO polls/s")  # fmt: skip
            fleet.start()
            fleet.start()
            held = fleet.wait_balanced(len(ids))
            time.sleep(min(10.0, args.seconds))
            three = measure(fleet.replicas, servers, args.seconds)
            per = ", ".join(
                f"{three[f'cpu_{n}']:.2f} CPU-s/min / {three[f'rss_{n}']:.0f} MB"
                for n in range(len(fleet.replicas))
            )
            print(f"  three replicas: held {sorted(len(v) for v in held.values())}; {per}; "
                  f"{three['polls_per_s']:.1f} INFO polls/s")  # fmt: skip
            ratio = three["cpu_total"] / one["cpu_total"] if one["cpu_total"] else float("nan")
            print(f"  three together: {three['cpu_total']:.2f} CPU-s/min, "
                  f"{ratio:.2f}x one replica (target at most 1.15x)")  # fmt: skip
            times = []
            for _ in range(args.kills):
                times.append(takeover(fleet, ids, bound_s))
                fleet.start()
                fleet.wait_balanced(len(ids))
            print(f"  takeover after SIGKILL: median {statistics.median(times):.2f} s, "
                  f"max {max(times):.2f} s over {len(times)} (target under {bound_s:g} s; "
                  f"add up to one INFO interval for the victim's last poll)")  # fmt: skip
        finally:
            fleet.stop_all()
            stop_servers(servers)


if __name__ == "__main__":
    main()
