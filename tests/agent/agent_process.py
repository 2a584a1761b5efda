"""`svc-monitor agent` as a real process of a test's own, optionally inside a namespace."""

import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.fixtures.netns import in_namespace


class AgentProcess:
    """One agent; its output in `log_path`. Stopped by PID, never by name."""

    def __init__(self, env: dict[str, str], workdir: Path, *, namespace: str | None = None):
        self.env = env
        self.namespace = namespace
        self.log_path = workdir / f"agent-{len(list(workdir.glob('agent-*.log')))}.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> "AgentProcess":
        command = [sys.executable, "-m", "svc_monitor", "agent"]
        if self.namespace is not None:
            command = in_namespace(self.namespace, command)
        base = {k: v for k, v in os.environ.items() if not k.startswith(("SVC_", "DB_"))}
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                command, env={**base, **self.env}, stdout=log, stderr=subprocess.STDOUT
            )
        return self

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()

    @property
    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
