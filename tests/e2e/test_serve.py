"""The real `svc-monitor` console script as a subprocess: start-up, watching, shutdown, bad env.

Everything stays on loopback: the service binds 127.0.0.1 and its outbound URLs point at
port 9 on 127.0.0.1, where nothing listens.
"""

import asyncio
import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest
import websockets
from playwright.async_api import expect
from websockets.typing import Origin

from tests.fixtures.app import fresh_data_dir, process_env
from tests.fixtures.browser import PageFactory
from tests.fixtures.servers import HOST, RunningServer

pytestmark = pytest.mark.slow

SVC_MONITOR = Path(sys.executable).parent / "svc-monitor"
READY_TIMEOUT_S = 10.0
EXIT_TIMEOUT_S = 10.0
POLL_S = 0.05
EXIT_CONFIG = 2
EXIT_STARTUP = 3
_EMBEDDED_PID = re.compile(r"embedded Valkey on 127\.0\.0\.1:\d+ \(pid (\d+)\)")


def service_env(**overrides: str) -> dict[str, str]:
    """This process's environment without any svc-monitor variable, plus loopback-only ones."""
    defaults = {
        "BIND_HOST": HOST,
        "STORAGE_TYPE": "memory",
        "SVC_DATA_DIR": fresh_data_dir(),
        "LOG_LEVEL": "info",
    }
    return process_env(**{**defaults, **overrides})


@dataclass
class Service:
    process: subprocess.Popen[bytes]
    port: int
    log_path: Path

    @property
    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_healthy(self) -> dict[str, Any]:
        """The first 200 from /api/health whose engine is connected; fails after READY_TIMEOUT_S."""
        deadline = time.monotonic() + READY_TIMEOUT_S
        last: object = None
        with httpx.Client(base_url=f"http://{HOST}:{self.port}", timeout=1.0) as client:
            while time.monotonic() < deadline:
                assert self.process.poll() is None, f"svc-monitor exited early:\n{self.log}"
                try:
                    response = client.get("/api/health")
                except httpx.TransportError as exc:
                    last = exc
                else:
                    last = response
                    if response.status_code == 200:
                        body: dict[str, Any] = response.json()
                        if body["database"]["status"] == "connected":
                            return body
                time.sleep(POLL_S)
        pytest.fail(f"no healthy /api/health within {READY_TIMEOUT_S:g} s ({last!r}):\n{self.log}")


def end_by_pid(pid: int) -> None:
    """SIGKILL one process we started (directly or as the service's child), if still there."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


StartService = Callable[..., Service]


@pytest.fixture
def start_service(tmp_path: Path) -> Iterator[StartService]:
    """Start `svc-monitor <args>` with `env`; every process started is killed by pid at the end."""
    started: list[subprocess.Popen[bytes]] = []

    def start(*args: str, env: Mapping[str, str]) -> Service:
        log_path = tmp_path / f"service-{len(started)}.log"
        with log_path.open("wb") as log:
            process = subprocess.Popen(
                [str(SVC_MONITOR), *args],
                env=dict(env),
                cwd=tmp_path,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        started.append(process)
        return Service(process, int(env["PORT"]), log_path)

    try:
        yield start
    finally:
        for process in started:
            if process.poll() is None:
                end_by_pid(process.pid)
            process.wait(timeout=EXIT_TIMEOUT_S)


def run_cli(*args: str, env: Mapping[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SVC_MONITOR), *args],
        env=dict(env),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def running_in(pid: int, workdir: Path) -> bool:
    """Whether `pid` is still the valkey-server working in `workdir` (not a reused pid)."""
    try:
        process = psutil.Process(pid)
        # Linux shows a removed working directory as "<path> (deleted)".
        cwd = process.cwd().removesuffix(" (deleted)")
        return process.status() != psutil.STATUS_ZOMBIE and Path(cwd) == workdir
    except psutil.Error:  # gone, or no longer ours to inspect
        return False


def wait_gone(pid: int, workdir: Path, timeout_s: float) -> bool:
    """Checks at least once; a zombie counts as gone (only its exited parent could reap it)."""
    deadline = time.monotonic() + timeout_s
    while running_in(pid, workdir):
        if time.monotonic() >= deadline:
            return False
        time.sleep(POLL_S)
    return True


class TestNewcomer:
    async def test_make_run_shows_the_embedded_valkeys_dashboard_with_moving_charts(
        self, start_service: StartService, open_page: PageFactory
    ) -> None:
        """What `make run` starts: the claim page first (user control is on by default),
        then the dashboard, whose charts fill in."""
        service = start_service("serve", "--embedded-valkey", env=service_env())
        health = await asyncio.to_thread(service.wait_healthy)
        version = health["database"]["version"]
        async with open_page(f"http://{HOST}:{service.port}/") as page:
            await expect(page).to_have_url(re.compile(r"/register$"))
            await page.fill('input[name="name"]', "New Comer")
            await page.fill('input[name="email"]', "new@example.com")
            await page.fill('input[name="password"]', "a good long password")
            await page.click('[data-action="claim"]')
            await expect(page.locator('[data-metric="version"] .card-value')).to_have_text(version)
            chart = page.locator('[data-chart][data-series="opsPerSec"]')
            await expect(chart.locator("canvas")).to_have_count(1)
            # One sample at once, the next one HISTORY_SAMPLE_INTERVAL_MS (10 s) later; the
            # chart fetches every 5 s, so a line is drawn within about 15 s.
            await expect(chart).to_have_attribute(
                "data-point-count", re.compile(r"^([2-9]|\d\d+)$"), timeout=25_000
            )


class TestServe:
    def test_embedded_valkey_is_watched_and_stopped_with_the_service(
        self, start_service: StartService
    ) -> None:
        service = start_service("serve", "--embedded-valkey", env=service_env())
        valkey_pid: int | None = None
        workdir: Path | None = None
        try:
            body = service.wait_healthy()
            database = body["database"]
            assert database["type"] == "valkey"
            assert database["version"].startswith("9.1.")
            assert database["capabilities"]["hasCommandLog"] is True
            assert database["host"] == HOST

            mentions = [
                line for line in service.log.splitlines() if "embedded valkey" in line.lower()
            ]
            assert len(mentions) == 1, service.log
            match = _EMBEDDED_PID.search(mentions[0])
            assert match is not None, mentions[0]
            valkey_pid = int(match.group(1))
            embedded = psutil.Process(valkey_pid)
            assert embedded.ppid() == service.process.pid
            assert "valkey-server" in embedded.name()
            assert any(
                c.status == psutil.CONN_LISTEN and c.laddr.port == database["port"]
                for c in embedded.net_connections("inet")
            )
            workdir = Path(embedded.cwd())  # valkey-server runs in its --dir
            assert workdir.name.startswith("svc-monitor-valkey-")

            service.process.send_signal(signal.SIGTERM)
            # Killed by the SIGTERM it re-raises once shut down, as uvicorn does; not hung.
            assert service.process.wait(timeout=EXIT_TIMEOUT_S) in (0, -signal.SIGTERM)
            assert wait_gone(valkey_pid, workdir, EXIT_TIMEOUT_S), (
                "embedded valkey-server outlived svc-monitor"
            )
            assert not workdir.exists(), "the embedded Valkey's temporary directory was left behind"
        finally:
            if valkey_pid is not None and workdir is not None:
                if running_in(valkey_pid, workdir):
                    end_by_pid(valkey_pid)
                shutil.rmtree(workdir, ignore_errors=True)  # only left over if the test failed

    def test_watches_the_instance_named_by_db_host(
        self, start_service: StartService, redis7_server: RunningServer
    ) -> None:
        env = service_env(DB_HOST=redis7_server.host, DB_PORT=str(redis7_server.port))
        service = start_service("serve", env=env)
        database = service.wait_healthy()["database"]
        assert database["type"] == "redis"
        assert database["version"].startswith("7.0.")
        assert database["port"] == redis7_server.port
        assert database["capabilities"]["hasCommandLog"] is False
        assert "embedded valkey" not in service.log.lower()

    async def test_serves_the_cli_socket_and_refuses_a_foreign_one(
        self, start_service: StartService, valkey_server: RunningServer
    ) -> None:
        """The WebSocket protocol is loaded on the first socket (console/socket_protocol.py)."""
        env = service_env(
            DB_HOST=valkey_server.host, DB_PORT=str(valkey_server.port), WORKSPACE_DISABLED="true"
        )
        service = start_service("serve", env=env)
        await asyncio.to_thread(service.wait_healthy)
        url = f"ws://{HOST}:{service.port}/api/cli/ws"
        origin = f"http://{HOST}:{service.port}"
        async with httpx.AsyncClient(base_url=origin) as client:
            for _ in range(100):  # the CLI arrives with the features, just after health
                if (await client.get("/api/metrics/slowlog/length")).status_code != 503:
                    break
                await asyncio.sleep(0.1)
        async with websockets.connect(url, origin=Origin(origin)) as socket_:
            await socket_.send(json.dumps({"type": "execute", "command": "PING"}))
            reply = json.loads(await socket_.recv())
        assert (reply["type"], reply["result"]) == ("result", "PONG")
        with pytest.raises(websockets.InvalidStatus) as foreign:
            async with websockets.connect(url, origin=Origin("http://evil.example")):
                pass
        assert foreign.value.response.status_code == 403


class TestBadEnvironment:
    @pytest.mark.parametrize(
        ("overrides", "variable"),
        [
            pytest.param({"DB_PORT": "70000"}, "DB_PORT", id="port-out-of-range"),
            pytest.param({"AUTH_SECRET": "short-secret-Zx9"}, "AUTH_SECRET", id="short-secret"),
            pytest.param(
                {"STORAGE_TYPE": "turso", "STORAGE_URL": "libsql://x.example"},
                "STORAGE_AUTH_TOKEN",
                id="turso-without-token",
            ),
            pytest.param({"DB_TLS": "maybe"}, "DB_TLS", id="not-a-boolean"),
            pytest.param(
                {"OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": "ftp://otlp:s3cret-Zx9@127.0.0.1/"},
                "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT",
                id="otlp-endpoint-not-http",
            ),
        ],
    )
    def test_check_config_exits_2_with_one_line_naming_the_variable(
        self, overrides: dict[str, str], variable: str
    ) -> None:
        result = run_cli("check-config", env=service_env(**overrides))
        assert result.returncode == EXIT_CONFIG
        lines = result.stderr.splitlines()
        assert len(lines) == 1, result.stderr
        assert variable in lines[0]
        assert result.stdout == ""
        for value in overrides.values():
            if value not in ("turso",):  # a value may be secret: never echo it back
                assert value not in lines[0]

    def test_a_missing_otlp_tls_file_exits_2_with_one_line_naming_the_variable(
        self, tmp_path: Path
    ) -> None:
        missing = tmp_path / "collector-ca.pem"
        env = service_env(OTEL_EXPORTER_OTLP_CERTIFICATE=str(missing))
        result = run_cli("check-config", env=env)
        assert result.returncode == EXIT_CONFIG
        assert result.stderr.splitlines() == [
            "svc-monitor: configuration error: OTEL_EXPORTER_OTLP_CERTIFICATE: "
            f"cannot read {missing}: No such file or directory"
        ]

    def test_serve_exits_before_starting_anything(self) -> None:
        env = service_env(DB_PORT="70000")
        result = run_cli("serve", "--embedded-valkey", env=env)
        assert result.returncode == EXIT_CONFIG
        assert result.stderr.splitlines() == [result.stderr.strip()]
        assert "DB_PORT" in result.stderr
        assert "Uvicorn" not in result.stderr
        assert "embedded" not in result.stderr.lower()
        # Nothing was left listening on the port it would have used.
        with socket.socket() as sock:
            sock.bind((HOST, int(env["PORT"])))


def on_one_sqlite_file(server: RunningServer, tmp_path: Path) -> dict[str, str]:
    return {
        "STORAGE_TYPE": "sqlite",
        "STORAGE_SQLITE_FILEPATH": str(tmp_path / "one.db"),
        "DB_HOST": server.host,
        "DB_PORT": str(server.port),
    }


class TestOneProcessPerSqliteFile:
    """SQLite storage serves one process; replicas need PostgreSQL (or Turso)."""

    def test_a_second_service_on_the_same_file_refuses_to_start_and_names_the_first(
        self, start_service: StartService, valkey_server: RunningServer, tmp_path: Path
    ) -> None:
        storage = on_one_sqlite_file(valkey_server, tmp_path)
        first = start_service("serve", env=service_env(**storage))
        first.wait_healthy()
        second = run_cli("serve", env=service_env(**storage))
        assert second.returncode == EXIT_STARTUP, second.stderr
        lines = second.stderr.strip().splitlines()
        assert len(lines) == 1, second.stderr
        assert str(tmp_path / "one.db") in lines[0]
        assert f"pid {first.process.pid}" in lines[0]
        assert "PostgreSQL" in lines[0]
        # The first one is unharmed, and its data is intact.
        assert first.process.poll() is None
        first.wait_healthy()

    def test_a_killed_service_leaves_no_lock_behind(
        self, start_service: StartService, valkey_server: RunningServer, tmp_path: Path
    ) -> None:
        storage = on_one_sqlite_file(valkey_server, tmp_path)
        first = start_service("serve", env=service_env(**storage))
        first.wait_healthy()
        end_by_pid(first.process.pid)  # SIGKILL: no shutdown ran
        first.process.wait(timeout=EXIT_TIMEOUT_S)
        second = start_service("serve", env=service_env(**storage))
        second.wait_healthy()
