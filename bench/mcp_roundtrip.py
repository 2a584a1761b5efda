"""How long an MCP tool call takes, from the assistant's side, with 100 connections:
p50/p99/longest over streamable HTTP (/mcp) and over stdio (`svc-monitor mcp`), for the
getters and for `diagnose` (target: getters p99 under 100 ms).

Starts `--servers` real Valkey servers on loopback (`--hz 1 --save ''`) and one
`svc-monitor serve` process from this checkout (memory storage, user control on, default
poll settings) whose default connection is the first server; an owner registers and makes
a personal token, adds the other servers through the API, and waits until the polls have
seen them. Then, through the MCP SDK's own client with that token, first over HTTP and
then over stdio (a `svc-monitor mcp` subprocess given SVC_URL and SVC_TOKEN), it calls the
getters (health, info_summary, slowlog, latency_latest, memory_stats, clients_summary,
list_instances) `--calls` times in turn, each on the next connection by name, then
`diagnose` `--diagnose` times the same way; one call at a time, each tool called once
beforehand and not counted. Prints per transport and class of tool: p50, p99 and the
longest call; the CPU-seconds the service (and the stdio process) spent meanwhile; and
the commands the monitored servers received meanwhile (INFO commandstats) beyond what
the polls send in the same time, measured beforehand while idle.

The file is not named mcp.py: the directory of a script comes first on Python's path, so
that name would hide the MCP SDK (`import mcp`) from the script itself.

    .venv/bin/python bench/mcp_roundtrip.py [--servers 100] [--calls 700] [--diagnose 50]
        [--quick]
"""

import argparse
import asyncio
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import httpx2
import psutil
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import TextContent

from _servers import Server, free_port, read_counts, start_servers, stop_servers

NOWHERE = "http://127.0.0.1:9"
SVC_MONITOR = str(Path(sys.executable).with_name("svc-monitor"))
PASSWORD = "bench password 1234"
GETTERS = (
    "health",
    "info_summary",
    "slowlog",
    "latency_latest",
    "memory_stats",
    "clients_summary",
    "list_instances",
)
TARGET_P99_MS = 100.0


@dataclass
class Run:
    """One transport's figures."""

    getters: list[float] = field(default_factory=list)
    by_tool: dict[str, list[float]] = field(default_factory=dict)
    diagnose: list[float] = field(default_factory=list)
    seconds: float = 0.0
    service_cpu: float = 0.0
    client_cpu: float | None = None  # the stdio process's, when there is one
    commands: Counter[str] = field(default_factory=Counter)


def serve(servers: list[Server], workdir: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STORAGE_", "DB_"))}
    env |= {
        "STORAGE_TYPE": "memory",
        "DB_HOST": "127.0.0.1",
        "DB_PORT": str(servers[0].port),
        "PORT": str(port),
        "BIND_HOST": "127.0.0.1",
        "WORKSPACE_DISABLED": "false",
        "AUTH_SECRET": "bench-secret-bench-secret-bench-secret",
        "ENTITLEMENT_URL": NOWHERE,
        "RELEASES_URL": NOWHERE,
        "LOG_LEVEL": "warning",
        "SVC_DATA_DIR": str(workdir / "data"),
    }
    log = (workdir / "serve.log").open("wb")
    process = subprocess.Popen(
        [SVC_MONITOR, "serve"],
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


async def owner_token(api: httpx.AsyncClient) -> str:
    """The owner claims the install (the client keeps the session cookie) and makes a
    personal token."""
    registered = await api.post(
        "/api/auth/register",
        json={"email": "owner@bench.test", "name": "Owner", "password": PASSWORD},
    )
    if registered.status_code != 201:
        raise RuntimeError(f"could not register the owner: HTTP {registered.status_code}")
    created = await api.post("/api/tokens", json={"name": "bench assistant"})
    if created.status_code != 201:
        raise RuntimeError(f"could not make a token: HTTP {created.status_code}")
    secret: str = created.json()["token"]
    return secret


async def add_all(api: httpx.AsyncClient, servers: list[Server]) -> list[str]:
    """The names of every connection, the default first."""
    names = [(await api.get("/api/connections")).json()[0]["name"]]
    for server in servers[1:]:
        name = f"v{server.port}"
        added = await api.post(
            "/api/connections", json={"name": name, "host": "127.0.0.1", "port": server.port}
        )
        added.raise_for_status()
        names.append(name)
    return names


def command_counts(servers: list[Server]) -> Counter[str]:
    total: Counter[str] = Counter()
    for server in servers:
        total += read_counts(server.port).commands
    return total


def beyond_polls(
    before: Counter[str], after: Counter[str], idle_rate: dict[str, float], seconds: float, n: int
) -> Counter[str]:
    """Commands received between two reads, less what the polls send in that time and
    less the first read's own INFO on each server."""
    extra: Counter[str] = Counter()
    for name in after:
        sent = after[name] - before[name] - idle_rate.get(name, 0.0) * seconds
        if name == "info":
            sent -= n
        if round(sent) > 0:
            extra[name] = round(sent)
    return extra


@contextlib.asynccontextmanager
async def http_session(url: str, token: str) -> AsyncIterator[ClientSession]:
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as client,
        streamable_http_client(f"{url}/mcp", http_client=client) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


@contextlib.asynccontextmanager
async def stdio_session(url: str, token: str) -> AsyncIterator[ClientSession]:
    env = {"SVC_URL": url, "SVC_TOKEN": token, "PATH": os.environ.get("PATH", "")}
    params = StdioServerParameters(command=SVC_MONITOR, args=["mcp"], env=env)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


def stdio_process() -> psutil.Process | None:
    """The `svc-monitor mcp` this process started, if it runs."""
    for child in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if child.cmdline()[-1:] == ["mcp"]:
                return child
    return None


def cpu_of(process: psutil.Process | None) -> float:
    if process is None:
        return 0.0
    times = process.cpu_times()
    return float(times.user + times.system)


async def call(session: ClientSession, tool: str, connection: str | None) -> float:
    arguments = {"connection": connection} if connection is not None else {}
    started = time.perf_counter()
    result = await session.call_tool(tool, arguments)
    elapsed = (time.perf_counter() - started) * 1000
    if result.is_error:
        text = " ".join(c.text for c in result.content if isinstance(c, TextContent))
        raise RuntimeError(f"{tool} on {connection} failed: {text[:300]}")
    return elapsed


async def measure_session(
    session: ClientSession,
    names: list[str],
    calls: int,
    diagnoses: int,
    service: psutil.Process,
    servers: list[Server],
    idle_rate: dict[str, float],
    client: Callable[[], psutil.Process | None],
) -> Run:
    run = Run()
    for tool in (*GETTERS, "diagnose"):  # the first /mcp request loads the SDK: not counted
        await call(session, tool, None if tool == "list_instances" else names[0])
    stdio = client()
    counts_before = await asyncio.to_thread(command_counts, servers)
    cpu_before, client_before = cpu_of(service), cpu_of(stdio)
    started = time.perf_counter()
    for index in range(calls):
        tool = GETTERS[index % len(GETTERS)]
        connection = None if tool == "list_instances" else names[index % len(names)]
        elapsed = await call(session, tool, connection)
        run.getters.append(elapsed)
        run.by_tool.setdefault(tool, []).append(elapsed)
    for index in range(diagnoses):
        run.diagnose.append(await call(session, "diagnose", names[index % len(names)]))
    run.seconds = time.perf_counter() - started
    run.service_cpu = cpu_of(service) - cpu_before
    run.client_cpu = cpu_of(stdio) - client_before if stdio is not None else None
    counts_after = await asyncio.to_thread(command_counts, servers)
    run.commands = beyond_polls(counts_before, counts_after, idle_rate, run.seconds, len(servers))
    return run


def p99(values: list[float]) -> float:
    # Inclusive: with few samples the default method reaches past the largest one.
    if len(values) < 2:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[98]


def figures(values: list[float]) -> str:
    return (
        f"p50 {statistics.median(values):6.1f} ms, p99 {p99(values):6.1f} ms, "
        f"longest {max(values):6.1f} ms over {len(values)}"
    )


def report(transport: str, run: Run) -> None:
    calls = len(run.getters) + len(run.diagnose)
    print(f"  {transport}:")
    verdict = "under" if p99(run.getters) < TARGET_P99_MS else "OVER"
    print(f"    getters : {figures(run.getters)} ({verdict} the {TARGET_P99_MS:g} ms target)")
    for tool, values in run.by_tool.items():
        print(f"      {tool:<16}: {figures(values)}")
    print(f"    diagnose: {figures(run.diagnose)}")
    client = f", the stdio process {run.client_cpu:.2f}" if run.client_cpu is not None else ""
    print(
        f"    {calls} calls in {run.seconds:.1f} s; CPU-s: the service "
        f"{run.service_cpu:.2f} ({run.service_cpu / calls * 1000:.1f} ms a call){client}"
    )
    sent = ", ".join(f"{name} {count}" for name, count in run.commands.most_common())
    print(f"    commands the servers received beyond the polls: {sent or 'none'}")


async def measure(
    servers: list[Server], calls: int, diagnoses: int, idle_s: float, workdir: Path
) -> None:
    process, url = serve(servers, workdir)
    try:
        async with httpx.AsyncClient(base_url=url, headers={"Origin": url}, timeout=30) as api:
            await ready(api, process)
            token = await owner_token(api)
            names = await add_all(api, servers)
        await asyncio.sleep(5)  # every connection polled a few times
        idle_before = await asyncio.to_thread(command_counts, servers)
        await asyncio.sleep(idle_s)
        idle_after = await asyncio.to_thread(command_counts, servers)
        idle_rate = {
            name: (idle_after[name] - idle_before[name] - (len(servers) if name == "info" else 0))
            / idle_s
            for name in idle_after
        }
        service = psutil.Process(process.pid)
        async with http_session(url, token) as session:
            over_http = await measure_session(
                session, names, calls, diagnoses, service, servers, idle_rate, lambda: None
            )
        async with stdio_session(url, token) as session:
            over_stdio = await measure_session(
                session, names, calls, diagnoses, service, servers, idle_rate, stdio_process
            )
        print(
            f"mcp: {len(servers)} connections; {calls} getter calls and {diagnoses} diagnose "
            "calls per transport, one at a time, each on the next connection by name"
        )
        report("streamable HTTP (/mcp)", over_http)
        report("stdio (svc-monitor mcp)", over_stdio)
    finally:
        process.terminate()
        process.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--servers", type=int, default=100)
    parser.add_argument("--calls", type=int, default=700, help="getter calls per transport")
    parser.add_argument("--diagnose", type=int, default=50, help="diagnose calls per transport")
    parser.add_argument("--quick", action="store_true", help="tiny sizes; its figures mean nothing")
    args = parser.parse_args()
    if args.quick:
        count, calls, diagnoses, idle_s = 3, 14, 3, 1.0
    else:
        count, calls, diagnoses, idle_s = args.servers, args.calls, args.diagnose, 10.0
    if count < 1 or calls < 1 or diagnoses < 1:
        parser.error("--servers, --calls and --diagnose must each be at least 1")
    with tempfile.TemporaryDirectory(prefix="mcp-bench-") as workdir:
        servers = start_servers(count, Path(workdir))
        try:
            asyncio.run(measure(servers, calls, diagnoses, idle_s, Path(workdir)))
        finally:
            stop_servers(servers)


if __name__ == "__main__":
    main()
