"""Who may scrape `/api/prometheus/metrics`, checked with a real Prometheus 2.42 and promtool.

Open by default (as exporters are); with PROMETHEUS_BEARER_TOKEN set, that token, which
Prometheus's `authorization` block sends, or a signed-in user. `/health` stays open.
"""

import asyncio
import contextlib
import shutil
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from svc_monitor.app import create_app
from tests.fixtures.app import free_port, serve_app
from tests.fixtures.servers import HOST, RunningServer
from tests.fixtures.workspace import Workspace, WorkspaceFactory, workspace_settings

PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"
SCRAPE_TOKEN = "scrape-token-0123456789abcdef"
METRICS = "/api/prometheus/metrics"


async def first_observation(space: Workspace) -> None:
    """The INFO poll has seen the default connection once (series come from live state)."""
    live = space.app.state.services.live_state
    connection = (await space.app.state.services.connections.list())[0]
    for _ in range(100):  # bounded: 10 s
        if live.latest(connection.id) is not None:
            return
        await asyncio.sleep(0.1)
    raise AssertionError("no INFO observation within 10 s")


class TestOpenByDefault:
    async def test_anyone_scrapes_and_the_text_is_valid(
        self, workspace: Workspace, valkey_server: RunningServer
    ):
        await first_observation(workspace)
        anonymous = workspace.browser()
        scraped = await anonymous.get(METRICS)
        assert scraped.status_code == 200
        assert scraped.headers["content-type"].startswith("text/plain; version=0.0.4")
        label = f'connection="{valkey_server.host}:{valkey_server.port}"'
        assert f"svc_memory_used_bytes{{{label}}}" in scraped.text
        assert 'type="valkey"' in scraped.text
        checked = await asyncio.to_thread(
            subprocess.run,
            [PROMTOOL, "check", "metrics"],
            input=scraped.text,
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        assert checked.returncode == 0, checked.stdout + checked.stderr
        assert (await anonymous.get("/health")).status_code == 200


class TestWithAToken:
    async def test_only_the_token_or_a_signed_in_user_scrapes(
        self, workspace_factory: WorkspaceFactory
    ):
        async with workspace_factory(PROMETHEUS_BEARER_TOKEN=SCRAPE_TOKEN) as space:
            anonymous = space.browser()
            refused = await anonymous.get(METRICS)
            assert refused.status_code == 401
            assert refused.headers["www-authenticate"].startswith("Bearer")
            assert SCRAPE_TOKEN not in refused.text
            for wrong in ("Bearer nope", f"Basic {SCRAPE_TOKEN}", f"Bearer {SCRAPE_TOKEN}x"):
                client = space.browser(Authorization=wrong)
                assert (await client.get(METRICS)).status_code == 401, wrong
            scraper = space.browser(Authorization=f"Bearer {SCRAPE_TOKEN}")
            assert (await scraper.get(METRICS)).status_code == 200
            # the scrape token is for this endpoint only
            assert (await scraper.get("/api/connections")).status_code == 401
            member = await space.join("Mia")
            assert (await member.client.get(METRICS)).status_code == 200
            assert (await anonymous.get("/health")).status_code == 200
            assert (await anonymous.get("/api/health")).status_code == 200

    async def test_the_token_holds_with_user_control_off(self, workspace_factory: WorkspaceFactory):
        async with workspace_factory(
            claim=False, WORKSPACE_DISABLED=True, PROMETHEUS_BEARER_TOKEN=SCRAPE_TOKEN
        ) as space:
            assert (await space.browser().get(METRICS)).status_code == 401
            scraper = space.browser(Authorization=f"Bearer {SCRAPE_TOKEN}")
            assert (await scraper.get(METRICS)).status_code == 200
            assert (await space.browser().get("/api/connections")).status_code == 200

    def test_a_short_token_stops_startup(self, valkey_server: RunningServer):
        with pytest.raises(ValueError, match="PROMETHEUS_BEARER_TOKEN"):
            workspace_settings(valkey_server, PROMETHEUS_BEARER_TOKEN="short")


@contextlib.contextmanager
def prometheus(config: str, workdir: Path) -> Iterator[str]:
    """A real Prometheus on a free loopback port with this scrape config; its base URL."""
    (workdir / "prometheus.yml").write_text(config)
    port = free_port()
    log = (workdir / "prometheus.log").open("wb")
    process = subprocess.Popen(
        [
            PROMETHEUS,
            f"--config.file={workdir / 'prometheus.yml'}",
            f"--storage.tsdb.path={workdir / 'data'}",
            f"--web.listen-address={HOST}:{port}",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
    )
    try:
        yield f"http://{HOST}:{port}"
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
        log.close()


async def targets_settled(prom_url: str, jobs: set[str]) -> dict[str, dict[str, str]]:
    """Each job's target once it has been scraped at least once (bounded: 30 s)."""
    deadline = time.monotonic() + 30
    async with httpx.AsyncClient(base_url=prom_url) as client:
        while time.monotonic() < deadline:
            with contextlib.suppress(httpx.HTTPError, ValueError):  # 503 text while starting
                body = (await client.get("/api/v1/targets")).json()
                found = {
                    t["labels"]["job"]: t
                    for t in body["data"]["activeTargets"]
                    if t["health"] != "unknown"
                }
                if jobs <= found.keys():
                    return found
            await asyncio.sleep(0.5)
    raise AssertionError("Prometheus did not scrape every job within 30 s")


async def query(client: httpx.AsyncClient, expr: str) -> list[dict[str, Any]]:
    """An instant query's result; empty while Prometheus is not ready to answer (it
    answers 503 in plain text until its storage has started)."""
    response = await client.get("/api/v1/query", params={"query": expr})
    if response.status_code != 200:
        return []
    result: list[dict[str, Any]] = response.json()["data"]["result"]
    return result


@pytest.fixture
async def served_with_token(valkey_server: RunningServer) -> AsyncIterator[str]:
    settings = workspace_settings(valkey_server, PROMETHEUS_BEARER_TOKEN=SCRAPE_TOKEN)
    async with serve_app(create_app(settings)) as url:
        yield url


@pytest.mark.slow
async def test_a_stock_prometheus_scrapes_with_its_authorization_block(
    served_with_token: str, tmp_path: Path, valkey_server: RunningServer
):
    address = served_with_token.removeprefix("http://")
    (tmp_path / "token").write_text(SCRAPE_TOKEN + "\n")  # Prometheus trims the newline
    config = f"""
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: with-token
    metrics_path: {METRICS}
    authorization:
      type: Bearer
      credentials_file: {tmp_path / "token"}
    static_configs: [{{targets: ["{address}"]}}]
  - job_name: without-token
    metrics_path: {METRICS}
    static_configs: [{{targets: ["{address}"]}}]
"""
    with prometheus(config, tmp_path) as prom_url:
        # The first scrape may time out (1 s) while the in-process app is still busy
        # starting; the refusal is what the next scrapes show.
        deadline = time.monotonic() + 30
        while True:
            targets = await targets_settled(prom_url, {"with-token", "without-token"})
            refused = targets["without-token"]
            if "401" in refused["lastError"] or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.5)
        assert refused["health"] == "down"
        assert "401" in refused["lastError"]
        deadline = time.monotonic() + 30
        label = f"{valkey_server.host}:{valkey_server.port}"
        async with httpx.AsyncClient(base_url=prom_url) as client:
            while time.monotonic() < deadline:
                result = await query(client, 'svc_memory_used_bytes{job="with-token"}')
                if result:
                    break
                await asyncio.sleep(0.5)
        assert result, "no svc_memory_used_bytes sample within 30 s"
        assert result[0]["metric"]["connection"] == label
        assert float(result[0]["value"][1]) > 0
