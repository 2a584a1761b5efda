"""Webhook delivery throughput and latency: deliveries/s to a local receiver with 100
webhooks subscribed, and the p99 from event to delivery.

An in-process svc-monitor (uvloop, as under uvicorn; memory storage, NODE_ENV=development
so a loopback receiver is allowed) watches a local Valkey; 100 webhooks subscribe to
client.blocked; the bench publishes client.blocked events on the service's bus (what the
ACL LOG poll does when a client fails to authenticate) at `--rate` events/s for
`--seconds`. An occurrence: each one is delivered. A stream of instance.down on one
connection would be one state, each newer one superseding the last still waiting
(webhooks/states.py), which is not what this bench measures.
Each event becomes 100 signed deliveries (stored, POSTed, results stored). The receiver
is a separate process (aiohttp) answering 200 at once and noting, per request, its
arrival time and the publish time carried in the event.

Prints deliveries/s received over the run (target: 1,000/s) and the p50/p99 from
publish to arrival at the receiver (target p99 under 50 ms). --quick publishes a few
events to 5 webhooks: it checks that the bench runs, its figures mean nothing.

    .venv/bin/python bench/webhooks.py [--seconds 10] [--rate 12] [--webhooks 100] [--quick]
"""

import argparse
import asyncio
import contextlib
import json
import multiprocessing
import socket
import statistics
import tempfile
import time
from multiprocessing.connection import Connection

import httpx
import uvloop
from aiohttp import web

from svc_monitor.app import create_app
from svc_monitor.config import Settings, StorageType
from svc_monitor.event_types.access import AclDenied
from svc_monitor.kit.embedded_valkey import EmbeddedValkey

NOWHERE = "http://127.0.0.1:9"  # the update check must not leave loopback


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def receive(port: int, seconds: float, results: Connection) -> None:
    """The receiver process: answer 200, note (arrival - publish) per request; after
    `seconds` of silence following the first request, send the notes back and exit."""
    latencies: list[float] = []
    arrivals: list[float] = []

    async def handle(request: web.BaseRequest) -> web.Response:
        body = await request.read()
        now = time.time()
        published = float(json.loads(body)["data"]["username"])
        latencies.append(now - published)
        arrivals.append(now)
        return web.Response(text="ok")

    async def serve() -> None:
        runner = web.ServerRunner(web.Server(handle), handle_signals=False)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        results.send("ready")
        deadline = time.monotonic() + seconds + 60
        last = 0
        while time.monotonic() < deadline:
            await asyncio.sleep(1)
            if arrivals and len(arrivals) == last:
                break  # a quiet second after traffic: done
            last = len(arrivals)
        await runner.cleanup()

    uvloop.run(serve())
    results.send((arrivals, latencies))


async def run(server: EmbeddedValkey, args: argparse.Namespace) -> None:
    port = free_port()
    mine, theirs = multiprocessing.Pipe()
    receiver = multiprocessing.Process(target=receive, args=(port, args.seconds, theirs))
    receiver.start()
    theirs.close()  # its end held by the receiver alone: if it dies, our reads end too
    assert mine.recv() == "ready"
    settings = Settings(
        _env_file=None,
        STORAGE_TYPE=StorageType.MEMORY,
        DB_HOST="127.0.0.1",
        DB_PORT=server.port,
        ENTITLEMENT_URL=NOWHERE,
        RELEASES_URL=NOWHERE,
        LOG_LEVEL="warning",
        WORKSPACE_DISABLED=True,
        NODE_ENV="development",
    )
    app = create_app(settings, freeze_heap=True)  # as the command line runs it
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://bench") as client,
    ):
        for n in range(args.webhooks):
            body = {
                "name": f"bench-{n}",
                "url": f"http://127.0.0.1:{port}/hook/{n}",
                "events": ["client.blocked"],
                "secret": "bench-secret-0123456789",
            }
            answer = await client.post("/api/webhooks", json=body)
            assert answer.status_code == 201, answer.text
        connections = await client.get("/api/connections")
        connections.raise_for_status()
        connection = connections.json()[0]["id"]
        bus = app.state.services.bus
        events = int(args.seconds * args.rate)
        started = time.monotonic()
        for n in range(events):
            due = started + n / args.rate
            await asyncio.sleep(max(0.0, due - time.monotonic()))
            bus.publish(
                AclDenied(
                    connection_id=connection,
                    reason="auth",
                    username=f"{time.time():.6f}",  # the publish time, read by the receiver
                    client_info="addr=127.0.0.1:50000",
                    context="toplevel",
                    object="AUTH",
                    count=n + 1,
                    timestamp_s=int(time.time()),
                )
            )
        arrivals, latencies = await asyncio.to_thread(mine.recv)
    receiver.join(10)
    expected = events * args.webhooks
    if len(arrivals) < 2:  # nothing to time: deliveries are refused or go nowhere
        raise SystemExit(f"{len(arrivals)} of {expected} deliveries arrived")
    span = max(arrivals) - min(arrivals)
    cuts = statistics.quantiles([x * 1000 for x in latencies], n=100)
    print(f"webhooks subscribed:     {args.webhooks}")
    print(f"events published:        {events} ({args.rate}/s for {args.seconds:g} s)")
    print(f"deliveries received:     {len(arrivals)} of {expected}")
    print(f"deliveries/s:            {len(arrivals) / span:,.0f}  (target 1,000/s)")
    print(f"event -> delivery p50:   {cuts[49]:.1f} ms")
    print(f"event -> delivery p99:   {cuts[98]:.1f} ms  (target < 50 ms)")
    # Per event: when its first and its last (100th) delivery arrived.
    by_event: dict[float, list[float]] = {}
    for arrived, latency in zip(arrivals, latencies, strict=True):
        by_event.setdefault(round(arrived - latency, 4), []).append(latency * 1000)
    firsts = sorted(min(v) for v in by_event.values())
    lasts = sorted(max(v) for v in by_event.values())
    print(f"first of an event's deliveries: median {statistics.median(firsts):.1f} ms")
    print(f"last of an event's deliveries:  median {statistics.median(lasts):.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--rate", type=float, default=12.0, help="events/s published")
    parser.add_argument("--webhooks", type=int, default=100)
    parser.add_argument("--quick", action="store_true", help="tiny sizes; its figures mean nothing")
    args = parser.parse_args()
    if args.quick:
        args.seconds, args.rate, args.webhooks = 1.0, 4.0, 5
    server = EmbeddedValkey()
    server.start()
    try:
        with tempfile.TemporaryDirectory(prefix="svc-bench-webhooks-"):
            uvloop.run(run(server, args))
    finally:
        with contextlib.suppress(Exception):
            server.stop()


if __name__ == "__main__":
    main()
