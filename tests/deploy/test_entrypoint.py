"""What the container image runs, run here: the Dockerfile's runtime stage read for its ENV,
USER, ENTRYPOINT, CMD and HEALTHCHECK, and that command started from this checkout's venv as
that user, with that environment, in a data directory laid out as the image lays out
/app/data. Docker itself is not needed (nor available where the tests run).

Only loopback: the service binds 127.0.0.1 (the image listens on every interface of its
own network namespace) and its outbound URLs point where nothing listens.
"""

import itertools
import os
import re
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import psutil
import pytest

from tests.deploy.image import (
    DOCKERFILE,
    IMAGE_DATA_DIR,
    IMAGE_VENV,
    IMAGE_WORKDIR,
    RuntimeStage,
    runtime_stage,
)
from tests.fixtures.app import LOOPBACK_NOWHERE, free_port
from tests.fixtures.servers import HOST, RunningServer

pytestmark = pytest.mark.slow

READY_TIMEOUT_S = 20.0
EXIT_TIMEOUT_S = 10.0
POLL_S = 0.1


def here(value: str, *, data_dir: Path) -> str:
    """An image path in an environment value, as the same place in this checkout's test."""
    return value.replace(f"{IMAGE_VENV}/", f"{sys.prefix}/").replace(IMAGE_DATA_DIR, str(data_dir))


def hidden_ancestors(paths: list[Path]) -> list[tuple[Path, Path]]:
    """For each path, its highest ancestor that other users cannot enter and that
    ancestor's child on the way, e.g. (/root, /root/.pyenv) for a Python under root's home."""
    found: list[tuple[Path, Path]] = []
    for path in paths:
        chain = [*reversed(path.parents), path]
        for parent, child in itertools.pairwise(chain):
            if not parent.stat().st_mode & stat.S_IXOTH:
                if (parent, child) not in found:
                    found.append((parent, child))
                break
    return found


def as_image_user(user: str, *, mounts: Path, writable: Path | None = None) -> list[str]:
    """The prefix that runs a command as the image's USER: setpriv when we are root, as
    ourselves otherwise (not root either, which is what is being tested).

    With `writable`, the command runs as Kubernetes' readOnlyRootFilesystem runs it: in a
    mount namespace of its own where the root file system is read-only and `writable` (the
    data volume) is not. In the image, Python and the venv sit in world-readable /usr/local
    and /opt; here they may sit under a directory closed to other users (root's home, for a
    pyenv Python): that directory is then an open tmpfs in the namespace, holding the needed
    child bind-mounted, so the image's user reads what it would read in the image. The PID
    stays the service's: each step execs the next."""
    if os.geteuid() != 0:
        return []
    setpriv = [shutil.which("setpriv") or "setpriv", f"--reuid={user}", f"--regid={user}"]
    setpriv.append("--clear-groups")
    hidden = hidden_ancestors(
        [Path(os.path.realpath(sys.executable)), Path(sys.base_prefix), Path(sys.prefix)]
    )
    steps = []
    for index, (_, child) in enumerate(hidden):
        staged = shlex.quote(str(mounts / str(index)))
        steps.append(f"mkdir -p {staged} && mount --bind {shlex.quote(str(child))} {staged}")
    for parent in dict.fromkeys(parent for parent, _ in hidden):
        steps.append(f"mount -t tmpfs -o mode=0755 tmpfs {shlex.quote(str(parent))}")
    for index, (_, child) in enumerate(hidden):
        quoted = shlex.quote(str(child))
        steps.append(f"mkdir -p {quoted} && mount --bind {mounts / str(index)} {quoted}")
    if writable is not None:
        quoted = shlex.quote(str(writable))
        steps.append(f"mount --bind {quoted} {quoted} && mount -o remount,bind,ro /")
    if not steps:
        return setpriv
    script = " && ".join(steps) + ' && exec "$@"'
    unshare = shutil.which("unshare") or "unshare"
    return [unshare, "--mount", "--propagation", "private", "sh", "-ec", script, "sh", *setpriv]


@dataclass
class Layout:
    workdir: Path
    data_dir: Path
    uid: int
    mounts: Path


@pytest.fixture
def image_layout() -> Iterator[Layout]:
    """/app (root's, world-readable) holding /app/data (the image user's, 0770), in /tmp:
    pytest's own tmp_path is closed to other users."""
    stage = runtime_stage()
    uid = int(stage.user) if os.geteuid() == 0 else os.geteuid()
    with tempfile.TemporaryDirectory(prefix="svc-image-") as root:
        Path(root).chmod(0o755)
        workdir = Path(root) / "app"
        workdir.mkdir(mode=0o755)
        data_dir = workdir / "data"
        data_dir.mkdir(mode=0o770)
        if os.geteuid() == 0:
            os.chown(data_dir, uid, uid)
        yield Layout(workdir, data_dir, uid, mounts=Path(root) / "mounts")


def image_env(stage: RuntimeStage, layout: Layout, valkey: RunningServer) -> dict[str, str]:
    env = {"LANG": "C.UTF-8", "HOME": str(layout.workdir)}
    env |= {name: here(value, data_dir=layout.data_dir) for name, value in stage.env.items()}
    env |= {
        # The compose file's and the docs' first step: a Valkey to watch.
        "DB_HOST": valkey.host,
        "DB_PORT": str(valkey.port),
        "PORT": str(free_port()),
        "BIND_HOST": HOST,
        "ENTITLEMENT_URL": LOOPBACK_NOWHERE,
        "RELEASES_URL": LOOPBACK_NOWHERE,
    }
    return env


def run_healthcheck(stage: RuntimeStage, env: dict[str, str], layout: Layout) -> int:
    timeout = float(stage.healthcheck_options["timeout"].removesuffix("s"))
    return subprocess.run(
        [*as_image_user(stage.user, mounts=layout.mounts), *stage.healthcheck],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=timeout,
        check=False,
    ).returncode


def wait_healthy(process: subprocess.Popen[bytes], port: int, log: Path) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    with httpx.Client(base_url=f"http://{HOST}:{port}", timeout=1.0) as client:
        while time.monotonic() < deadline:
            assert process.poll() is None, f"svc-monitor exited early:\n{log.read_text()}"
            try:
                response = client.get("/api/health")
            except httpx.TransportError:
                pass
            else:
                if response.status_code == 200 and response.json()["database"]["status"] == (
                    "connected"
                ):
                    return
            time.sleep(POLL_S)
    pytest.fail(f"no healthy /api/health within {READY_TIMEOUT_S:g} s:\n{log.read_text()}")


class TestDockerfile:
    def test_runtime_stage_is_what_the_image_promises(self):
        stage = runtime_stage()
        assert stage.user == "1001"
        assert stage.command == ["svc-monitor", "serve"]
        assert stage.env["SVC_DATA_DIR"] == IMAGE_DATA_DIR
        assert stage.workdir == IMAGE_WORKDIR
        assert stage.env["STORAGE_SQLITE_FILEPATH"].startswith(IMAGE_DATA_DIR + "/")
        assert stage.exposed == [stage.env["PORT"]]
        assert stage.healthcheck_options["interval"] == "30s"
        assert stage.env["PATH"].split(":")[0] == f"{IMAGE_VENV}/bin"

    def test_runtime_stage_installs_no_compiler_and_no_extra(self):
        text = DOCKERFILE.read_text()
        runtime = text[text.rindex("\nFROM ") :]
        assert "apt-get" not in runtime
        assert "build-essential" not in runtime
        # The wheel alone: its runtime dependencies, never the test or AI extras.
        installs = re.findall(r"pip install[^\n]*(?:\\\n[^\n]*)*", runtime)
        assert installs, "the runtime stage installs nothing"
        assert all("[" not in line for line in installs), installs


class TestEntrypoint:
    def test_image_command_serves_as_uid_1001_on_a_read_only_root_and_passes_its_healthcheck(
        self, image_layout: Layout, valkey_server: RunningServer
    ):
        stage = runtime_stage()
        env = image_env(stage, image_layout, valkey_server)
        executable = shutil.which(stage.command[0], path=env["PATH"])
        assert executable == f"{sys.prefix}/bin/svc-monitor", "the image PATH finds another one"
        log = image_layout.workdir / "service.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                [
                    *as_image_user(
                        stage.user, mounts=image_layout.mounts, writable=image_layout.data_dir
                    ),
                    executable,
                    *stage.command[1:],
                ],
                env=env,
                cwd=image_layout.workdir,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        try:
            wait_healthy(process, int(env["PORT"]), log)
            assert psutil.Process(process.pid).uids().effective == image_layout.uid
            assert run_healthcheck(stage, env, image_layout) == 0
            # SQLite by default, in the data directory (the one place it may write),
            # owned by the image's user.
            database = image_layout.data_dir / "audit.db"
            assert database.stat().st_uid == image_layout.uid
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=EXIT_TIMEOUT_S)
            # Docker marks the container unhealthy once the service stops answering.
            assert run_healthcheck(stage, env, image_layout) != 0
        finally:
            if process.poll() is None:
                process.kill()
                process.wait(timeout=EXIT_TIMEOUT_S)
        assert "Traceback" not in log.read_text()
