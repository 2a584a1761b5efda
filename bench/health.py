"""How fast /api/health answers while monitored servers hang: p50/p99 with 100
connections, 10 of them SIGSTOPped (target: p99 under 250 ms whatever they do).

Starts `--servers` real Valkey servers on loopback (`--hz 1 --save ''`) and one
`svc-monitor serve` process from this checkout (memory storage, default poll settings),
whose default connection is the first server; adds the others through the API and waits
until the polls have seen them. Then SIGSTOPs `--hung` servers, the default one among
them, and for `--seconds` asks /api/health every 100 ms over HTTP, for the default
(hung) connection and for a healthy one by X-Connection-Id, printing p50, p99 and the
longest wait of each, and what the answers said.

    .venv/bin/python bench/health.py [--servers 100] [--hung 10] [--seconds 30] [--quick]
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
from collections import Counter
from pathlib import Path

import httpx

from _servers import Server, free_port, start_servers, stop_servers

NOWHERE = "http://127.0.0.1:9"
ASK_EVERY_S = 0.1


def serve(servers: list[Server], workdir: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STORAGE_", "DB_"))}
    env |= {
        "STORAGE_TYPE": "memory",
        "DB_HOST": "127.0.0.1",
        "DB_PORT": str(servers[0].port),
        "PORT": str(port),
        "BIND_HOST": "127.0.0.1",
        "WORKSPACE_DISABLED": "true",
        "ENTITLEMENT_URL": NOWHERE,
        "RELEASES_URL": NOWHERE,
        "SVC_DATA_DIR": str(workdir / "data"),
    }
    log = (workdir / "serve.log").open("wb")
    process = subprocess.Popen(
        [str(Path(sys.executable).parent / "svc-monitor"), "serve"],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    return process, f"http://127.0.0.1:{port}"


async def ready(api: httpx.AsyncClient, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError("svc-monitor exited")
        try:
            if (await api.get("/api/health")).status_code == 200:
                return
        except httpx.TransportError:
            pass
        await asyncio.sleep(0.1)
    raise RuntimeError("svc-monitor did not become ready within 60 s")


async def add_all(api: httpx.AsyncClient, servers: list[Server]) -> list[str]:
    ids = [(await api.get("/api/connections")).json()[0]["id"]]
    for server in servers[1:]:
        added = await api.post(
            "/api/connections",
            json={"name": f"v{server.port}", "host": "127.0.0.1", "port": server.port},
        )
        added.raise_for_status()
        ids.append(added.json()["id"])
    return ids


async def ask(
    api: httpx.AsyncClient, seconds: float, connection: str | None
) -> tuple[list[float], Counter[str]]:
    times: list[float] = []
    said: Counter[str] = Counter()
    headers = {"X-Connection-Id": connection} if connection else {}
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        started = time.perf_counter()
        reply = await api.get("/api/health", headers=headers)
        times.append((time.perf_counter() - started) * 1000)
        body = reply.json()
        said[f"{reply.status_code} {body['status']}/{body['database']['status']}"] += 1
        await asyncio.sleep(ASK_EVERY_S)
    return times, said


def p99(values: list[float]) -> float:
    # Inclusive: with few samples the default method reaches past the largest one.
    if len(values) < 2:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[98]


async def measure(servers: list[Server], hung: int, seconds: float, workdir: Path) -> None:
    process, url = serve(servers, workdir)
    try:
        async with httpx.AsyncClient(base_url=url, timeout=30) as api:
            await ready(api, process)
            ids = await add_all(api, servers)
            await asyncio.sleep(5)  # every connection polled a few times
            paused = servers[:hung]
            for server in paused:
                server.process.send_signal(signal.SIGSTOP)
            try:
                (hung_times, hung_said), (ok_times, ok_said) = await asyncio.gather(
                    ask(api, seconds, None), ask(api, seconds, ids[-1])
                )
            finally:
                for server in paused:
                    server.process.send_signal(signal.SIGCONT)
        print(
            f"health: {len(servers)} connections, {hung} SIGSTOPped, {seconds:g} s of asking "
            "every 100 ms"
        )
        for name, times, said in (
            ("the default (hung)", hung_times, hung_said),
            ("a healthy one", ok_times, ok_said),
        ):
            print(
                f"  {name:<18}: p50 {statistics.median(times):6.1f} ms, p99 {p99(times):6.1f} ms, "
                f"longest {max(times):6.1f} ms over {len(times)}; said {dict(said)}"
            )
    finally:
        process.terminate()
        process.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--servers", type=int, default=100)
    parser.add_argument("--hung", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--quick", action="store_true", help="tiny sizes; its figures mean nothing")
    args = parser.parse_args()
    count, hung, seconds = (3, 1, 2.0) if args.quick else (args.servers, args.hung, args.seconds)
    with tempfile.TemporaryDirectory(prefix="health-bench-") as workdir:
        servers = start_servers(count, Path(workdir))
        try:
            asyncio.run(measure(servers, hung, seconds, Path(workdir)))
        finally:
            stop_servers(servers)


if __name__ == "__main__":
    main()
