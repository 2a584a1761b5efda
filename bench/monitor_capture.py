"""MONITOR capture throughput: lines/s a capture keeps up with, and the memory it costs.

Starts a local Valkey, drives it from a separate process with a pipelined client loop
(bounded: `--pipeline` SETs per round trip, for `--seconds`, at most `--rate` commands/s
or flat out), and runs one capture through
an in-process svc-monitor (uvloop, as under uvicorn; SQLite storage in a temporary
directory, so what the capture stores is not counted as process memory). Prints:

  - lines/s the capture stored, against commands/s the server ran meanwhile (from its
    own INFO), and their ratio (1.0: every command of the window was captured);
  - how far the reader fell behind: the largest output buffer the server held for the
    MONITOR client (CLIENT LIST omem), i.e. what the server kept because we were slower;
  - the app's peak resident memory growth during the capture (sampled every 20 ms).

--quick captures for one second after a short lead-in: it checks that the bench runs, its
figures mean nothing.

    .venv/bin/python bench/monitor_capture.py [--seconds 10] [--pipeline 100] [--rate 0]
        [--quick]
"""

import argparse
import asyncio
import contextlib
import multiprocessing
import tempfile
import time
from pathlib import Path

import httpx
import psutil
import uvloop
import valkey

from svc_monitor.app import create_app
from svc_monitor.config import Settings, StorageType
from svc_monitor.console.monitor.models import Caps
from svc_monitor.kit.embedded_valkey import EmbeddedValkey

NOWHERE = "http://127.0.0.1:9"  # the update check must not leave loopback


def drive(port: int, seconds: float, pipeline: int, rate: int) -> None:
    """The load: pipelined SETs of 40-byte values over 1,000 keys, for `seconds`; at most
    `rate` commands/s (0: as fast as one client can)."""
    started = time.monotonic()
    deadline = started + seconds
    with valkey.Valkey(port=port, lib_name=None, lib_version=None) as conn:
        n = 0
        while time.monotonic() < deadline:
            pipe = conn.pipeline(transaction=False)
            for _ in range(pipeline):
                pipe.set(f"bench:{n % 1000}", "v" * 40)
                n += 1
            pipe.execute()
            if rate:
                ahead = n / rate - (time.monotonic() - started)
                if ahead > 0:
                    time.sleep(ahead)


def processed(conn: valkey.Valkey) -> int:
    stats = conn.info("stats")
    assert isinstance(stats, dict)
    return int(stats["total_commands_processed"])


def monitor_omem(conn: valkey.Valkey) -> int:
    clients = conn.client_list()
    assert isinstance(clients, list)
    return max((int(c["omem"]) for c in clients if c.get("cmd") == "monitor"), default=0)


async def run(
    server: EmbeddedValkey, seconds: float, lead_s: float, pipeline: int, rate: int, data: Path
) -> None:
    settings = Settings(
        _env_file=None,
        STORAGE_TYPE=StorageType.SQLITE,
        STORAGE_SQLITE_FILEPATH=data / "bench.db",
        DB_HOST="127.0.0.1",
        DB_PORT=server.port,
        ENTITLEMENT_URL=NOWHERE,
        RELEASES_URL=NOWHERE,
        LOG_LEVEL="warning",
        WORKSPACE_DISABLED=True,
    )
    app = create_app(settings)
    process = psutil.Process()
    probe = valkey.Valkey(port=server.port, decode_responses=True)
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://bench") as client,
    ):
        # The load outlives the capture by 2 s, so the capture's last second is loaded too.
        load = multiprocessing.Process(
            target=drive, args=(server.port, lead_s + seconds + 2, pipeline, rate)
        )
        load.start()
        await asyncio.sleep(lead_s)  # the load at full speed before the capture starts
        baseline = process.memory_info().rss
        before = processed(probe)
        # Through the service, past the API's caps (100,000 lines, 32 MiB): a flat-out load
        # reaches those in a second or two, and the point is the rate sustained for longer.
        monitor = app.state.features.monitor
        connection = await app.state.services.connections.resolve(None)
        caps = Caps(duration_ms=int(seconds * 1000), max_lines=10**8, max_bytes=2**40)
        session_id = (await monitor.start(connection, caps, requested_by="bench")).id
        peak, omem = baseline, 0
        while (await monitor.get(session_id)).status.value == "running":
            peak = max(peak, process.memory_info().rss)
            omem = max(omem, monitor_omem(probe))
            await asyncio.sleep(0.02)
        ran = processed(probe) - before
        answer = await client.get(f"/api/monitor/sessions/{session_id}")
        answer.raise_for_status()
        final = answer.json()
        load.join(timeout=30)
        if load.exitcode is None:
            load.terminate()
            load.join(timeout=10)
    probe.close()  # type: ignore[no-untyped-call]
    if load.exitcode != 0:  # without its load, the capture measured an idle server
        raise SystemExit(f"the load process failed (exit code {load.exitcode})")
    # Truncated is a result: a flat-out load outruns the reader until the server holds
    # 32 MiB for it. Failed or stopped means the capture broke: its rates mean nothing.
    if final["status"] not in ("completed", "truncated"):
        raise SystemExit(f"capture ended {final['status']} ({final['endReason']})")
    elapsed = (final["endedAt"] - final["startedAt"]) / 1000
    lines = final["lineCount"]
    print(f"capture: {final['status']} ({final['endReason']}) after {elapsed:.1f} s")
    print(f"lines stored: {lines:,} -> {lines / elapsed:,.0f} lines/s")
    print(
        f"server ran {ran:,} commands meanwhile -> {ran / elapsed:,.0f}/s; "
        f"captured/ran = {lines / max(1, ran):.2f}"
    )
    print(f"largest MONITOR output buffer on the server: {omem / 2**20:.1f} MiB")
    print(f"app peak RSS growth during the capture: {(peak - baseline) / 2**20:.1f} MiB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--pipeline", type=int, default=100)
    parser.add_argument("--rate", type=int, default=0, help="commands/s; 0: flat out")
    parser.add_argument("--quick", action="store_true", help="tiny sizes; its figures mean nothing")
    args = parser.parse_args()
    lead_s = 2.0
    if args.quick:
        args.seconds, lead_s = 1.0, 0.5
    server = EmbeddedValkey()
    server.start()
    try:
        with tempfile.TemporaryDirectory(prefix="svc-bench-monitor-") as data:
            uvloop.run(run(server, args.seconds, lead_s, args.pipeline, args.rate, Path(data)))
    finally:
        with contextlib.suppress(Exception):
            server.stop()


if __name__ == "__main__":
    main()
