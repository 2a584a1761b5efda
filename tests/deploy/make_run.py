"""What `make run` starts, started here: the recipe as make itself prints it (`make -n`, with
the install step taken as done), run by `sh` in a directory of the test's own, with this
venv's Python and this checkout's sources in place of `.venv/bin/svc-monitor`.

The environment is a user's: no svc-monitor variable, except a free PORT (3001 may be
taken on a shared machine) and outbound URLs that point where nothing listens.
"""

import contextlib
import re
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest

from tests.fixtures.app import process_env
from tests.fixtures.servers import HOST

ROOT = Path(__file__).resolve().parents[2]
# The Makefile's $(RUN_STAMP): given to `make -o`, the install step is not printed.
RUN_STAMP = ".venv/.installed-run"
READY_TIMEOUT_S = 30.0
EXIT_TIMEOUT_S = 15.0
POLL_S = 0.1
EMBEDDED = re.compile(r"embedded Valkey on 127\.0\.0\.1:(\d+) \(pid (\d+)\)")


def user_env(**overrides: str) -> dict[str, str]:
    return process_env(**overrides)


def recipe(env: Mapping[str, str]) -> str:
    """The shell text `make run` would run in this environment."""
    printed = subprocess.run(
        ["make", "--no-print-directory", "-s", "-n", "-o", RUN_STAMP, "run"],
        cwd=ROOT,
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    ).stdout
    assert ".venv/bin/svc-monitor serve" in printed, printed
    here = f"{shlex.quote(sys.executable)} -m svc_monitor"
    return printed.replace(".venv/bin/svc-monitor", here)


@dataclass
class MakeRun:
    """One `make run`: the shell make would start, and the service under it."""

    shell: subprocess.Popen[bytes]
    port: int
    log_path: Path
    # The service and its children (the embedded Valkey), once up: psutil checks that a pid
    # still names the process it named then before it signals one.
    processes: list[psutil.Process] = field(default_factory=list)

    @property
    def base(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def service(self) -> psutil.Process:
        """The svc-monitor process: the shell itself if it exec'd, else its child."""
        shell = psutil.Process(self.shell.pid)
        for process in [shell, *shell.children()]:
            if "svc_monitor" in process.cmdline():  # `python -m svc_monitor`, not `sh -c`
                return process
        pytest.fail(f"no svc-monitor process under the shell:\n{self.log}")

    def embedded(self) -> tuple[int, int]:
        """The embedded Valkey's port and pid, as the log names them."""
        match = EMBEDDED.search(self.log)
        assert match is not None, self.log
        return int(match.group(1)), int(match.group(2))

    def wait_healthy(self) -> dict[str, Any]:
        """The first /api/health whose default connection is connected."""
        deadline = time.monotonic() + READY_TIMEOUT_S
        last: object = None
        with httpx.Client(base_url=self.base, timeout=2.0) as client:
            while time.monotonic() < deadline:
                assert self.shell.poll() is None, f"make run ended early:\n{self.log}"
                try:
                    response = client.get("/api/health")
                except httpx.TransportError as exc:
                    last = exc
                else:
                    last = response
                    body: dict[str, Any] = response.json()
                    if response.status_code == 200 and body["database"]["status"] == "connected":
                        self._remember_pids()
                        return body
                time.sleep(POLL_S)
        pytest.fail(f"no healthy /api/health within {READY_TIMEOUT_S:g} s ({last!r}):\n{self.log}")

    def stop(self) -> None:
        """Ctrl-C, as in the terminal `make run` runs in: SIGINT to the service."""
        self.service().send_signal(signal.SIGINT)
        assert self.shell.wait(timeout=EXIT_TIMEOUT_S) == 0, self.log

    def _remember_pids(self) -> None:
        service = self.service()
        self.processes = [service, *service.children(recursive=True)]


@contextlib.contextmanager
def make_runs(workdir: Path) -> Iterator[Any]:
    """`start(env)` runs `make run` in `workdir`; whatever is left is killed by pid after."""
    started: list[MakeRun] = []

    def start(env: Mapping[str, str]) -> MakeRun:
        log_path = workdir / f"make-run-{len(started)}.log"
        with log_path.open("wb") as log:
            shell = subprocess.Popen(
                ["sh", "-c", recipe(env)],
                cwd=workdir,
                env=dict(env),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        run = MakeRun(shell, int(env["PORT"]), log_path)
        started.append(run)
        return run

    try:
        yield start
    finally:
        for run in started:
            for process in run.processes:
                with contextlib.suppress(psutil.NoSuchProcess):
                    process.kill()
            if run.shell.poll() is None:
                run.shell.kill()
            run.shell.wait(timeout=EXIT_TIMEOUT_S)
