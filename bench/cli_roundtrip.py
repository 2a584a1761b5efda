"""Browser CLI round trip: `GET` through the WebSocket, one command after another.

Serves svc-monitor (memory storage, user control on) with uvicorn on loopback against an
embedded Valkey, signs in as the owner, opens /api/cli/ws with the session cookie and
sends `GET key` N times (default 2000), each after the previous answer. Every command
takes the real path: session re-check, rate limit, tokenizer, policy, the Valkey round
trip, formatting and the activity-log write. The socket's rate limit (50 commands/s) is
raised for the run, through CliService's own parameters, so the figure is what the path
costs rather than the limit. Prints commands/s and the median and p99 round trip. Client
and server share one process and event loop, so the figures include the client's own
work: a browser elsewhere sees the server's part plus its network. --quick sends a few
dozen: it checks that the bench runs, its figures mean nothing.

    .venv/bin/python bench/cli_roundtrip.py [--commands 2000] [--quick]
"""

import argparse
import asyncio
import dataclasses
import json
import socket
import statistics
import time

import httpx
import uvicorn
import uvloop
from fastapi import FastAPI
from pydantic import SecretStr
from websockets.asyncio.client import ClientConnection, connect
from websockets.typing import Origin

from svc_monitor.app import create_app
from svc_monitor.config import Settings, StorageType
from svc_monitor.console.cli.service import CliService
from svc_monitor.console.limits import WS_MAX_MESSAGE_BYTES
from svc_monitor.kit.embedded_valkey import EmbeddedValkey
from svc_monitor.services import Features, Services

NOWHERE = "http://127.0.0.1:9"  # the update check must not leave loopback
PASSWORD = "correct horse battery"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


async def serve(settings: Settings) -> tuple[uvicorn.Server, "asyncio.Task[None]", str]:
    port = free_port()
    app = create_app(settings)
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=port,
        log_level="warning",
        ws="websockets-sansio",
        ws_max_size=WS_MAX_MESSAGE_BYTES,
        access_log=False,
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    for _ in range(400):  # bounded: 20 s
        if server.started:
            unlimited(app)
            return server, task, f"http://127.0.0.1:{port}"
        await asyncio.sleep(0.05)
    raise SystemExit("svc-monitor did not start within 20 s")


def unlimited(app: FastAPI) -> None:
    """The app's CLI with the per-socket rate limit out of the way."""
    services: Services = app.state.services
    features: Features = app.state.features
    cli = CliService(
        services.settings,
        auth=services.auth,
        connections=services.connections,
        commands_per_second=1e9,
        burst=10**9,
    )
    app.state.features = dataclasses.replace(features, cli=cli)


async def owner_cookie(url: str) -> str:
    async with httpx.AsyncClient(base_url=url, headers={"Origin": url}) as client:
        response = await client.post(
            "/api/auth/register",
            json={"email": "bench@example.com", "name": "Bench", "password": PASSWORD},
        )
        response.raise_for_status()
        return response.headers["set-cookie"].split(";", 1)[0]


async def run_commands(ws: ClientConnection, commands: int) -> list[float]:
    """Round trips in ms, one command after another."""
    frame = json.dumps({"type": "execute", "command": "GET bench:key"})
    timings: list[float] = []
    for _ in range(commands):
        started = time.perf_counter()
        await ws.send(frame)
        answer = json.loads(await ws.recv())
        timings.append((time.perf_counter() - started) * 1000)
        if answer.get("type") != "result" or answer["result"] != '"bench-value"':
            raise SystemExit(f"unexpected answer: {answer}")
    return timings


async def main(commands: int, warm_up: int) -> None:
    valkey = EmbeddedValkey()
    valkey.start()
    try:
        settings = Settings(
            _env_file=None,
            STORAGE_TYPE=StorageType.MEMORY,
            DB_HOST="127.0.0.1",
            DB_PORT=valkey.port,
            ENTITLEMENT_URL=NOWHERE,
            RELEASES_URL=NOWHERE,
            LOG_LEVEL="warning",
            WORKSPACE_DISABLED=False,
            AUTH_SECRET=SecretStr("bench-secret-bench-secret-bench-secret"),
        )
        server, task, url = await serve(settings)
        try:
            cookie = await owner_cookie(url)
            ws_url = url.replace("http://", "ws://") + "/api/cli/ws"
            # SVC_UNSAFE_CLI is off, as by default: the value is set directly.
            with socket.create_connection(("127.0.0.1", valkey.port), timeout=5) as conn:
                conn.sendall(b"*3\r\n$3\r\nSET\r\n$9\r\nbench:key\r\n$11\r\nbench-value\r\n")
                conn.recv(64)
            async with connect(
                ws_url, origin=Origin(url), additional_headers={"Cookie": cookie}
            ) as ws:
                await run_commands(ws, warm_up)
                started = time.perf_counter()
                timings = await run_commands(ws, commands)
                elapsed = time.perf_counter() - started
        finally:
            server.should_exit = True
            await asyncio.wait_for(task, timeout=20)
    finally:
        valkey.stop()
    timings.sort()
    p99 = timings[min(len(timings) - 1, int(len(timings) * 0.99))]
    print(f"commands: {commands} GET on one CLI socket, one after another")
    print(f"commands/s: {commands / elapsed:,.0f}")
    print(f"round trip: median {statistics.median(timings):.3f} ms, p99 {p99:.3f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commands", type=int, default=2000)
    parser.add_argument("--quick", action="store_true", help="tiny sizes; its figures mean nothing")
    args = parser.parse_args()
    if args.quick:
        uvloop.run(main(commands=20, warm_up=5))
    else:
        uvloop.run(main(max(1, min(args.commands, 100_000)), warm_up=200))
