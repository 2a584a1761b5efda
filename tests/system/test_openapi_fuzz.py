"""Schemathesis over the whole published API: a served svc-monitor on PostgreSQL, every
operation of /api/openapi.json sent generated and mutated requests (its examples, the
coverage of its constraints, fuzzing, and stateful sequences through the document's
links), and every answer checked: never a 5xx, always the documented shape.

Left out: the operations that make svc-monitor dial an address the request names (adding,
editing or testing a connection, a webhook's URL and its test send). Fuzzed, they would
send it to addresses beyond this machine's loopback; their validation has tests of its
own (tests/connections, tests/webhooks, tests/system/test_hostile_input.py).
"""

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fixtures.app import free_port
from tests.fixtures.replica_processes import start_service, stop_process
from tests.fixtures.servers import RunningServer, ServerFactory

pytestmark = pytest.mark.timeout(900)

DIALS = {
    ("post", "/api/connections"),  # a new connection is polled
    ("post", "/api/connections/test"),
    ("put", "/api/connections/{connection_id}"),  # an edited host is polled
    ("post", "/api/webhooks"),
    ("put", "/api/webhooks/{id}"),
    ("post", "/api/webhooks/{id}/test"),
}
EXAMPLES = 20


@pytest.fixture
def served(server_factory: ServerFactory, shared_postgres: dict[str, Any], tmp_path: Path) -> Any:
    watched: RunningServer = server_factory.start("valkey")
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STORAGE_", "DB_"))}
    env |= {
        **{k: str(v) for k, v in shared_postgres.items()},
        "DB_HOST": watched.host,
        "DB_PORT": str(watched.port),
        "PORT": str(port),
        "BIND_HOST": "127.0.0.1",
        "WORKSPACE_DISABLED": "true",
        "ENTITLEMENT_URL": "http://127.0.0.1:9",
        "RELEASES_URL": "http://127.0.0.1:9",
        "SVC_DATA_DIR": str(tmp_path / "data"),
    }
    process = start_service(env, tmp_path / "serve.log")
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx.get(f"{base}/api/health", timeout=2).status_code == 200:
                break
        except httpx.TransportError:
            pass
        assert process.poll() is None, (tmp_path / "serve.log").read_text()
        assert time.monotonic() < deadline, (tmp_path / "serve.log").read_text()
        time.sleep(0.1)
    try:
        yield base, tmp_path / "serve.log"
    finally:
        stop_process(process)


def without_dialling(document: dict[str, Any]) -> dict[str, Any]:
    """The document less the operations in DIALS (each must be there: a renamed one would
    otherwise slip into the fuzzing unnoticed)."""
    paths = document["paths"]
    for method, path in DIALS:
        assert method in paths.get(path, {}), (method, path)
        del paths[path][method]
    return document


def test_every_operation_answers_as_documented_and_never_5xx(served: Any, tmp_path: Path) -> None:
    base, log = served
    document = without_dialling(httpx.get(f"{base}/api/openapi.json").json())
    schema = tmp_path / "openapi.json"
    schema.write_text(json.dumps(document))
    command = [
        str(Path(sys.executable).parent / "st"),
        "run",
        str(schema),
        "--url", base,
        "--checks", "not_a_server_error,response_schema_conformance",
        "--max-examples", str(EXAMPLES),
        "--seed", "1",
        "--workers", "1",
        # Mutations carry our own Origin, as the UI's requests do.
        "--header", f"Origin: {base}",
        "--report", "junit",
        "--report-dir", str(tmp_path / "report"),
        "--no-color",
    ]  # fmt: skip
    ran = subprocess.run(command, capture_output=True, text=True, timeout=840, check=False)
    summary = ran.stdout[-6000:]
    assert ran.returncode == 0, f"{summary}\n{ran.stderr[-2000:]}"
    counts = re.search(r"^\s*(\d+) generated, (\d+) passed\s*$", summary, re.MULTILINE)
    assert counts is not None, summary  # "..., 3 failed" would not match
    generated, passed = map(int, counts.groups())
    assert generated == passed > 1000, summary
    text = log.read_text(errors="replace")
    assert "Traceback" not in text, text[-4000:]
