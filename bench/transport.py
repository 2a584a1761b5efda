"""What TLS costs a monitored connection: connecting, and each INFO poll after that.

Starts Debian's Redis 7.0 (/usr/bin/redis-server) on loopback with a plain port and a TLS
port (a throwaway CA from trustme, the test dependency), then for each transport:

  - connect: a new EngineClient's first INFO (TCP connect, handshake, INFO), the very
    first (which builds the SSL context: system store plus the connection's CA) and the
    median of --connects after it (the context is kept per TLS material, engine/tls.py);
  - poll: INFO round trips on the open connection, median and p99 wall time, and the CPU
    this process spent per INFO (the figure that bounds polls/s per core).

--quick makes a few connects and a few dozen polls: it checks that the bench runs, its
figures mean nothing.

    .venv/bin/python bench/transport.py [--connects 50] [--polls 3000] [--quick]

The SSH tunnel is left out: its cost is one SSH login per connection (not per poll) plus
sshd forwarding the bytes, and a real bastion is a system service this script will not
set up.
"""

import argparse
import asyncio
import socket
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import trustme

from svc_monitor.engine.client import EngineClient, EngineTarget
from svc_monitor.engine.tls import client_context

REDIS = "/usr/bin/redis-server"
HOST = "127.0.0.1"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        port: int = sock.getsockname()[1]
        return port


def start_redis(directory: Path, ca: trustme.CA) -> tuple[subprocess.Popen[bytes], int, int]:
    leaf = ca.issue_cert(HOST)
    cert, key = directory / "server.crt", directory / "server.key"
    cert.write_bytes(b"".join(blob.bytes() for blob in leaf.cert_chain_pems))
    leaf.private_key_pem.write_to_path(str(key))
    ca_file = directory / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    plain, tls = free_port(), free_port()
    args = [
        REDIS,
        "--bind", HOST, "--port", str(plain), "--tls-port", str(tls),
        "--tls-cert-file", str(cert), "--tls-key-file", str(key),
        "--tls-ca-cert-file", str(ca_file), "--tls-auth-clients", "no",
        "--save", "", "--appendonly", "no", "--dir", str(directory),
    ]  # fmt: skip
    server = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((HOST, plain), timeout=0.2):
                return server, plain, tls
        except OSError:
            time.sleep(0.05)
    server.kill()
    raise RuntimeError("redis-server did not start")


def client(target: EngineTarget) -> EngineClient:
    return EngineClient(target, connect_timeout_s=5, command_timeout_s=5)


async def connect_ms(target: EngineTarget, times: int) -> tuple[float, float]:
    """(first, median of the rest) ms for a new client's first INFO."""
    client_context.cache_clear()
    samples = []
    for _ in range(times + 1):
        started = time.perf_counter()
        engine = client(target)
        await engine.info_raw()
        samples.append((time.perf_counter() - started) * 1000)
        await engine.close()
    return samples[0], statistics.median(samples[1:])


async def poll(target: EngineTarget, times: int) -> tuple[float, float, float]:
    """(median ms, p99 ms, CPU microseconds) per INFO on one open connection."""
    engine = client(target)
    await engine.info_raw()
    walls = []
    cpu_started = time.process_time()
    for _ in range(times):
        started = time.perf_counter()
        await engine.info_raw()
        walls.append((time.perf_counter() - started) * 1000)
    cpu_us = (time.process_time() - cpu_started) / times * 1e6
    await engine.close()
    walls.sort()
    return statistics.median(walls), walls[int(len(walls) * 0.99) - 1], cpu_us


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--connects", type=int, default=50)
    parser.add_argument("--polls", type=int, default=3000)
    parser.add_argument("--quick", action="store_true", help="tiny sizes; its figures mean nothing")
    args = parser.parse_args()
    if args.quick:
        args.connects, args.polls = 3, 30
    ca = trustme.CA()
    ca_pem = ca.cert_pem.bytes().decode()
    with tempfile.TemporaryDirectory(prefix="svc-bench-tls-") as directory:
        server, plain_port, tls_port = start_redis(Path(directory), ca)
        try:
            targets = {
                "plain": EngineTarget(HOST, plain_port),
                "TLS": EngineTarget(HOST, tls_port, tls=True, tls_ca_cert=ca_pem),
            }
            print(f"Redis 7.0 on loopback; {args.connects} connects, {args.polls} INFO polls")
            for name, target in targets.items():
                first, connect = await connect_ms(target, args.connects)
                median, p99, cpu = await poll(target, args.polls)
                print(
                    f"{name:>5}: connect + first INFO {first:5.2f} ms first, then "
                    f"{connect:4.2f} ms | INFO round trip "
                    f"median {median:.3f} ms, p99 {p99:.3f} ms | CPU {cpu:.0f} us per INFO "
                    f"({1e6 / cpu:,.0f} INFO/s per core)"
                )
        finally:
            server.terminate()
            server.wait(timeout=10)


if __name__ == "__main__":
    asyncio.run(main())
