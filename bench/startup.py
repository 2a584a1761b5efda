"""Start-up time and idle memory of the service, as a user starting it would see them.

Prints:
  - the median wall time from process start to the first 200 from GET /api/health
    (target: under 1.0 s), over several runs;
  - the resident memory after 30 s idle with one connection (target: under 80 MB).

Runs `svc-monitor serve` (memory storage) against a Valkey this script starts on a
free loopback port; every address is 127.0.0.1 and every process is stopped by PID.
--quick starts it twice and idles 1 s: it checks that the bench runs, its figures mean
nothing.

    .venv/bin/python bench/startup.py [--runs 7] [--idle 30] [--quick]
"""

import argparse
import contextlib
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import psutil

from svc_monitor.kit.embedded_valkey import EmbeddedValkey

BIN = Path(sys.executable).with_name("svc-monitor")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/health", timeout=1) as r:
            return bool(r.status == 200)
    except OSError:
        return False


def start(valkey_port: int, cwd: str) -> tuple[subprocess.Popen[bytes], int, float]:
    """The service answering /api/health: its process, port, and seconds from its start."""
    for _ in range(3):  # bounded: a port lost to a race is retried twice at most
        port = free_port()
        env = {
            **os.environ,
            "PORT": str(port),
            "BIND_HOST": "127.0.0.1",
            "STORAGE_TYPE": "memory",
            "DB_HOST": "127.0.0.1",
            "DB_PORT": str(valkey_port),
            "LOG_LEVEL": "warning",
            # Nothing may leave loopback: the update check asks a port nobody listens on.
            "ENTITLEMENT_URL": "http://127.0.0.1:9",
            "RELEASES_URL": "http://127.0.0.1:9",
        }
        started = time.perf_counter()
        process = subprocess.Popen(
            [str(BIN), "serve"], env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        deadline = started + 20
        while not healthy(port):
            if process.poll() is not None or time.perf_counter() > deadline:
                stop(process)
                output = process.stderr.read().decode() if process.stderr else ""
                if "address already in use" in output:
                    # Free when chosen, the port can be taken before the service binds it
                    # (an outgoing connection gets one from the same range): not its fault.
                    break
                raise RuntimeError(f"service did not start: {output}")
            time.sleep(0.005)
        else:
            return process, port, time.perf_counter() - started
    raise RuntimeError("service did not start: its port was taken three times in a row")


def stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(5)


@contextlib.contextmanager
def service(valkey_port: int) -> Iterator[tuple[subprocess.Popen[bytes], int, float]]:
    with tempfile.TemporaryDirectory() as cwd:
        process, port, elapsed = start(valkey_port, cwd)
        try:
            yield process, port, elapsed
        finally:
            stop(process)
            if process.stderr:
                process.stderr.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--idle", type=float, default=30.0)
    parser.add_argument("--quick", action="store_true", help="tiny sizes; its figures mean nothing")
    args = parser.parse_args()
    if args.quick:
        args.runs, args.idle = 2, 1.0

    valkey = EmbeddedValkey()
    valkey.start()
    try:
        times = []
        for _ in range(args.runs):
            with service(valkey.port) as (_, _, elapsed):
                times.append(elapsed)
        with service(valkey.port) as (process, port, _):
            healthy(port)  # the one connection is open and detected
            time.sleep(args.idle)
            rss_mb = psutil.Process(process.pid).memory_info().rss / 2**20
    finally:
        valkey.stop()

    median = statistics.median(times)
    print(
        f"startup to 200 /api/health: median {median:.3f} s "
        f"(min {min(times):.3f}, max {max(times):.3f}, {len(times)} runs; target < 1.0 s)"
    )
    print(
        f"resident memory after {args.idle:g} s idle, one connection: {rss_mb:.1f} MB "
        "(target < 80 MB)"
    )


if __name__ == "__main__":
    main()
