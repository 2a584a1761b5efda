"""A Python client generated with openapi-python-client from the served /api/openapi.json,
as a user would make one, driving a served svc-monitor over real HTTP on 127.0.0.1: the
document must generate with no warning (no model or endpoint dropped), and the client's
calls, typed answers and token handling must work against the real server."""

import asyncio
import contextlib
import importlib
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest

from svc_monitor.app import create_app
from tests.fixtures.app import serve_app
from tests.fixtures.servers import RunningServer, ServerFactory
from tests.fixtures.workspace import workspace_settings

pytestmark = pytest.mark.slow

GENERATOR = Path(sys.executable).parent / "openapi-python-client"
PACKAGE = "svc_monitor_client"
# The generator knows JSON, forms and octet-stream bodies; the OTLP receivers' protobuf
# and the offline licence's raw-token bodies are binary to it (docs/api.md shows this file).
CONFIG = """\
content_type_overrides:
  application/x-protobuf: application/octet-stream
  application/jwt: application/octet-stream
  text/plain: application/octet-stream
"""
# What the generator prints when it leaves something out or cannot finish.
TROUBLE = ("warning", "unable", "could not", "skipping", "error", "omitted", "removal")


@pytest.fixture(scope="module")
def watched(server_factory: ServerFactory) -> RunningServer:
    """A Valkey of this module's own, to add as a connection through the client."""
    return server_factory.start("valkey")


@contextlib.asynccontextmanager
async def served(default: RunningServer) -> AsyncIterator[str]:
    """svc-monitor with user control on, over HTTP on a free loopback port."""
    async with serve_app(create_app(workspace_settings(default))) as base:
        yield base


def generate(document: bytes, workdir: Path) -> tuple[Path, str]:
    """The generated package's parent folder and everything the generator printed."""
    (workdir / "openapi.json").write_bytes(document)
    (workdir / "config.yaml").write_text(CONFIG)
    command = [
        str(GENERATOR), "generate",
        "--path", "openapi.json",
        "--output-path", PACKAGE,
        "--meta", "none",
        "--config", "config.yaml",
    ]  # fmt: skip
    # Its post-generation step formats with ruff, found on PATH: ours, from this venv.
    env = {**os.environ, "PATH": f"{GENERATOR.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    ran = subprocess.run(
        command, cwd=workdir, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    output = ran.stdout + ran.stderr
    assert ran.returncode == 0, output
    return workdir, output


@contextlib.contextmanager
def imported(parent: Path) -> Iterator[ModuleType]:
    """The generated package, imported from `parent`, forgotten afterwards."""
    sys.path.insert(0, str(parent))
    try:
        yield importlib.import_module(PACKAGE)
    finally:
        sys.path.remove(str(parent))
        for name in [n for n in sys.modules if n == PACKAGE or n.startswith(f"{PACKAGE}.")]:
            del sys.modules[name]


def module(name: str) -> Any:
    return importlib.import_module(f"{PACKAGE}.{name}")


async def test_a_generated_client_drives_the_api(watched: RunningServer, tmp_path: Path):
    async with served(watched) as base:
        async with httpx.AsyncClient(timeout=10) as fetch:
            document = (await fetch.get(f"{base}/api/openapi.json")).content
        parent, output = generate(document, tmp_path)
        trouble = [line for line in output.splitlines() if line.lower().startswith(TROUBLE)]
        assert trouble == [], output[-4000:]
        generated = parent / PACKAGE
        # one module per operation, none left out
        assert (generated / "api" / "connections" / "connections_create.py").is_file()
        assert len(list((generated / "api").glob("*/*.py"))) > 100
        with imported(parent) as client_package:
            await drive(client_package, base, watched)


async def drive(package: ModuleType, base: str, watched: RunningServer) -> None:
    models = module("models")
    # A browser-like client: the session cookie it is given, and our Origin on changes.
    browser = package.Client(
        base_url=base, headers={"Origin": base}, raise_on_unexpected_status=True
    )
    async with browser:
        health = await module("api.system.system_get_health").asyncio(client=browser)
        assert isinstance(health, models.HealthRead)
        assert health.api.status == "ok"

        register = module("api.workspace.workspace_register")
        owner = models.RegisterWrite(
            email="owner@example.com", name="Olive Owner", password="correct horse battery"
        )
        registered = await register.asyncio_detailed(client=browser, body=owner)
        assert registered.status_code == 201

        token_body = models.TokenWrite(name="generated-client")
        made = await module("api.workspace.workspace_create_token").asyncio(
            client=browser, body=token_body
        )
        assert isinstance(made, models.TokenRead)
        assert made.token.startswith("svc_pat_")

    anonymous = package.Client(base_url=base)
    listing = module("api.connections.connections_list")
    async with anonymous:
        refused = await listing.asyncio_detailed(client=anonymous)
        assert refused.status_code == 401
        assert isinstance(refused.parsed, models.ErrorBody)
        assert refused.parsed.status_code == 401

    script = package.AuthenticatedClient(base_url=base, token=made.token)
    async with script:
        before = await listing.asyncio(client=script)
        assert [c.is_default for c in before] == [True]

        create = module("api.connections.connections_create")
        body = models.ConnectionCreate(name="added-by-client", host=watched.host, port=watched.port)
        added = await create.asyncio_detailed(client=script, body=body)
        assert added.status_code == 201, added.content
        assert isinstance(added.parsed, models.ConnectionRead)
        assert added.parsed.port == watched.port

        after = await listing.asyncio(client=script)
        assert {c.name for c in after} == {"Default", "added-by-client"}
        fetch = module("api.connections.connections_get")
        for _ in range(200):  # bounded: 10 s for the first poll of the new connection
            got = await fetch.asyncio(client=script, connection_id=added.parsed.id)
            if got.engine.status == "connected":
                break
            await asyncio.sleep(0.05)
        assert got.engine.status == "connected", got.engine
        assert got.engine.type_ == "valkey"
