"""Shared by the benches: real Valkey servers started for a bench, and a probe of how long
the event loop is held at a time. Not a bench itself (bench/run_all.py skips names that
start with an underscore)."""

import asyncio
import contextlib
import ctypes
import signal
import socket
import subprocess
import time
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from svc_monitor.engine.info import parse_info
from svc_monitor.kit.embedded_valkey import valkey_binary

PR_SET_PDEATHSIG = 1  # prctl: the signal a child gets when its parent dies


@dataclass
class Server:
    """One Valkey started for the bench, and its process."""

    port: int
    process: subprocess.Popen[bytes]


def start_servers(
    count: int, workdir: Path, extra: Sequence[str] = (), binary: Path | None = None
) -> list[Server]:
    """Start `count` servers, each on a port the kernel just gave us, and wait for all;
    `extra` are more command-line options (`--loadmodule <path>`); `binary` another
    server than the embedded Valkey (Debian's redis-server, say).

    Started from this thread: a child asks to die with the thread that started it
    (PR_SET_PDEATHSIG), so one started from a pool thread would die with that thread."""
    servers = []
    for _ in range(count):
        port = free_port()
        data = workdir / f"{port}"
        data.mkdir()
        command = [
            str(binary or valkey_binary()),
            "--bind", "127.0.0.1", "--port", str(port),
            "--hz", "1", "--save", "", "--appendonly", "no",
            "--dir", str(data), "--logfile", str(data / "valkey.log"),
            *extra,
        ]  # fmt: skip
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=_die_with_parent,  # a bench killed outright leaves no server behind
        )
        servers.append(Server(port, process))

    def ready(server: Server) -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError):
                _ping(server.port)
                return
            time.sleep(0.05)
        raise RuntimeError(f"valkey on port {server.port} did not start")

    try:
        with ThreadPoolExecutor(max_workers=16) as pool:
            list(pool.map(ready, servers))
    except BaseException:
        stop_servers(servers)
        raise
    return servers


def stop_servers(servers: list[Server]) -> None:
    for server in servers:
        with contextlib.suppress(Exception):
            server.process.terminate()
    for server in servers:
        with contextlib.suppress(Exception):
            server.process.wait(timeout=5)


def _ping(port: int) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:
        conn.sendall(b"*1\r\n$4\r\nPING\r\n")
        if not conn.recv(64).startswith(b"+PONG"):
            raise OSError("no PONG")


def _die_with_parent() -> None:
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class LoopLag:
    """Asks to wake every 10 ms and keeps how late each wake-up was: the longest single
    step of the event loop is the longest lag."""

    def __init__(self) -> None:
        self.lags_ms: list[float] = []
        self._stop = False

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        while not self._stop:
            asked = loop.time()
            await asyncio.sleep(0.01)
            self.lags_ms.append((loop.time() - asked - 0.01) * 1000)

    def stop(self) -> None:
        self._stop = True


@dataclass(frozen=True)
class ServerCounts:
    """What one server has seen so far: commands by name, bytes in and out."""

    commands: Counter[str]
    bytes_in: int
    bytes_out: int
    probe_reply: int  # the size of the reply to this very read, not yet in bytes_out
    at: float  # monotonic seconds when it was read


def read_counts(port: int) -> ServerCounts:
    """The server's own counts, over a bare socket: a client library would add its
    handshake (HELLO, CLIENT SETINFO ...) to what it reads."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:
        conn.sendall(b"*3\r\n$4\r\nINFO\r\n$5\r\nstats\r\n$12\r\ncommandstats\r\n")
        reply = b""
        while not _complete(reply):
            chunk = conn.recv(65536)
            if not chunk:
                raise OSError("connection closed")
            reply += chunk
    info = parse_info(reply.split(b"\r\n", 1)[1])
    commands: Counter[str] = Counter()
    for name, fields in info.sections.get("commandstats", {}).items():
        calls = fields.get("calls") if isinstance(fields, dict) else None
        if isinstance(calls, int):
            commands[name.removeprefix("cmdstat_")] = calls
    return ServerCounts(
        commands=commands,
        bytes_in=info.get_int("stats", "total_net_input_bytes") or 0,
        bytes_out=info.get_int("stats", "total_net_output_bytes") or 0,
        probe_reply=len(reply),
        at=time.monotonic(),
    )


def _complete(reply: bytes) -> bool:
    header, sep, rest = reply.partition(b"\r\n")
    return bool(sep) and len(rest) >= int(header[1:]) + 2
