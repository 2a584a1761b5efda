"""Polling cost: CPU per INFO poll, polls/s per core, and the load we put on each server.

Starts N real Valkey servers (default 50) on loopback, registers them all with one
in-process svc-monitor (memory storage), lets it poll at the default settings for a
while (default 60 s), and prints:

  - CPU ms per INFO poll, all polling CPU of the process divided by the INFO polls made
    (parse + observe + store, and the share of the rarer polls: SLOWLOG, commandstats ...);
  - polls/s per core (1000 / that figure; target: at least 3,000);
  - commands per minute the monitor sent each server, read from the server's own
    commandstats (median over servers, by command).

    .venv/bin/python bench/poll_fanout.py [--servers 50] [--seconds 60]
"""

import argparse
import asyncio
import contextlib
import statistics
import time
from collections import Counter
from typing import Any

import httpx
import uvloop
import valkey

from svc_monitor.app import create_app
from svc_monitor.config import Settings, StorageType
from svc_monitor.embedded import EmbeddedValkey
from svc_monitor.services import Services

NOWHERE = "http://127.0.0.1:9"  # the update check must not leave loopback


def commandstats(port: int) -> Counter[str]:
    with valkey.Valkey(host="127.0.0.1", port=port) as client:
        stats: dict[str, Any] = client.info("commandstats")
    return Counter({name.removeprefix("cmdstat_"): int(v["calls"]) for name, v in stats.items()})


async def run(servers: list[EmbeddedValkey], seconds: float) -> None:
    settings = Settings(
        _env_file=None,
        STORAGE_TYPE=StorageType.MEMORY,
        DB_HOST="127.0.0.1",
        DB_PORT=servers[0].port,
        ENTITLEMENT_URL=NOWHERE,
        RELEASES_URL=NOWHERE,
        LOG_LEVEL="warning",
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
        ids = [c.id for c in await services.connections.list()]
        await asyncio.sleep(3)  # every loop started and past its first (detecting) pass

        before = {s.port: commandstats(s.port) for s in servers}
        info_ticks = sum(services.supervisor.loops_of(i)["info"].ticks for i in ids)
        cpu, wall = time.process_time(), time.perf_counter()
        await asyncio.sleep(seconds)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        info_ticks = sum(services.supervisor.loops_of(i)["info"].ticks for i in ids) - info_ticks
        after = {s.port: commandstats(s.port) for s in servers}

    per_poll_ms = cpu * 1000 / info_ticks
    print(
        f"{len(servers)} servers, {wall:.0f} s at default settings: {info_ticks} INFO polls "
        f"({info_ticks / wall:.1f}/s), process CPU {cpu:.2f} s ({cpu / wall * 100:.1f}% of a core)"
    )
    print(
        f"CPU per INFO poll: {per_poll_ms:.3f} ms -> {1000 / per_poll_ms:,.0f} polls/s per core "
        "(target >= 3,000)"
    )
    minutes = wall / 60
    rates: dict[str, list[float]] = {}
    for port in after:
        sent = after[port] - before[port]
        sent["info"] -= 1  # our own `INFO commandstats` read between the two snapshots
        for name, calls in sent.items():
            rates.setdefault(name, []).append(calls / minutes)
    total = statistics.median(
        sum(r[i] for r in rates.values() if i < len(r)) for i in range(len(after))
    )
    print(f"commands per minute sent to each server (median over servers): {total:.1f}")
    for name, values in sorted(rates.items(), key=lambda kv: -statistics.median(kv[1])):
        print(f"  {name:<24} {statistics.median(values):7.1f}/min")


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
