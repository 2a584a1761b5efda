"""Polling cost: CPU per INFO poll, polls/s per core, and the load we put on each server.

Starts N real Valkey servers (default 50) on loopback, registers them all with one
in-process svc-monitor (memory storage), lets it poll at the default settings for a
while (default 60 s), and prints:

  - CPU per INFO poll measured two ways:
    isolated: back-to-back INFO poll passes (target lookup, INFO round trip, parse,
      observe, store) against one server, which is the per-poll cost itself;
    whole process: all CPU the process used at default settings divided by the INFO polls
      made, which adds the rarer polls (SLOWLOG, commandstats, CLIENT LIST ...), timers,
      the event loop waking every server every second, and cold caches;
  - polls/s per core for each (1000 / ms; target: at least 3,000);
  - commands per minute the monitor sent each server, read from the server's own
    commandstats (median over servers, by command).

    .venv/bin/python bench/poll_fanout.py [--servers 50] [--seconds 60]
"""

import argparse
import asyncio
import contextlib
import socket
import statistics
import time
from collections import Counter

import httpx
import uvloop

from svc_monitor.app import create_app
from svc_monitor.config import Settings, StorageType
from svc_monitor.engine.info import parse_info
from svc_monitor.kit.embedded_valkey import EmbeddedValkey
from svc_monitor.services import Features, Services

NOWHERE = "http://127.0.0.1:9"  # the update check must not leave loopback


def commandstats(port: int) -> Counter[str]:
    """The server's own command counts, read over a bare socket: a client library would add
    its handshake (HELLO, CLIENT SETINFO ...) to the counts it reads."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:
        conn.sendall(b"*2\r\n$4\r\nINFO\r\n$12\r\ncommandstats\r\n")
        reply = b""
        while not _complete(reply):
            reply += conn.recv(65536)
    body = reply.split(b"\r\n", 1)[1]
    counts: Counter[str] = Counter()
    for name, fields in parse_info(body).sections.get("commandstats", {}).items():
        calls = fields.get("calls") if isinstance(fields, dict) else None
        if isinstance(calls, int):
            counts[name.removeprefix("cmdstat_")] = calls
    return counts


def _complete(reply: bytes) -> bool:
    header, sep, rest = reply.partition(b"\r\n")
    return bool(sep) and len(rest) >= int(header[1:]) + 2


async def run(servers: list[EmbeddedValkey], seconds: float) -> None:
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
    app = create_app(settings)
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
        features: Features = app.state.features  # installed by the lifespan
        ids = [c.id for c in await services.connections.list()]
        await asyncio.sleep(3)  # every loop started and past its first (detecting) pass

        before = {s.port: commandstats(s.port) for s in servers}
        info_ticks = sum(features.supervisor.loops_of(i)["info"].ticks for i in ids)
        cpu, wall = time.process_time(), time.perf_counter()
        await asyncio.sleep(seconds)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        info_ticks = sum(features.supervisor.loops_of(i)["info"].ticks for i in ids) - info_ticks
        after = {s.port: commandstats(s.port) for s in servers}
        isolated_ms = await isolated_info_poll_ms(features, ids[0])

    per_poll_ms = cpu * 1000 / info_ticks
    print(
        f"CPU per INFO poll, isolated: {isolated_ms:.3f} ms -> {1000 / isolated_ms:,.0f} "
        "polls/s per core (target >= 3,000)"
    )
    print(
        f"{len(servers)} servers, {wall:.0f} s at default settings: {info_ticks} INFO polls "
        f"({info_ticks / wall:.1f}/s), process CPU {cpu:.2f} s ({cpu / wall * 100:.1f}% of a core)"
    )
    print(
        f"CPU per INFO poll, whole process: {per_poll_ms:.3f} ms -> "
        f"{1000 / per_poll_ms:,.0f} polls/s per core"
    )
    minutes = wall / 60
    sent = {port: after[port] - before[port] for port in after}
    for counts in sent.values():
        counts["info"] -= 1  # the `INFO commandstats` that took the first snapshot
    totals = [sum(counts.values()) / minutes for counts in sent.values()]
    print(
        "commands per minute sent to each server (median over servers): "
        f"{statistics.median(totals):.1f}"
    )
    names = {name for counts in sent.values() for name in counts}
    per_command = {n: statistics.median(c[n] / minutes for c in sent.values()) for n in names}
    for name, rate in sorted(per_command.items(), key=lambda kv: -kv[1]):
        if rate > 0:
            print(f"  {name:<24} {rate:7.1f}/min")


async def isolated_info_poll_ms(
    features: Features, connection_id: str, passes: int = 3000
) -> float:
    """CPU ms of one INFO poll pass, run back to back through the real PollLoop.tick."""
    loop = features.supervisor.loops_of(connection_id)["info"]
    for _ in range(100):  # warm up
        await loop.tick()
    started = time.process_time()
    for _ in range(passes):
        await loop.tick()
    return (time.process_time() - started) * 1000 / passes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60.0)
    args = parser.parse_args()
    servers: list[EmbeddedValkey] = []
    try:
        for _ in range(args.servers):
            server = EmbeddedValkey()
            server.start()
            servers.append(server)
        # uvloop, as the service runs under uvicorn.
        uvloop.run(run(servers, args.seconds))
    finally:
        for server in servers:
            with contextlib.suppress(Exception):
                server.stop()


if __name__ == "__main__":
    main()
