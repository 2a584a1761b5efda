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
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fixtures.replica_processes import replica_process, service_env
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
# Slot statistics need cluster mode, and the watched server is standalone: the route answers
# 501 there, as docs/features/http-api.md says and the route documents. Everywhere else a
# 501 is still a failure (the search engine is loaded so the vector search routes answer).
DOCUMENTED_501S = """
[[operations]]
include-path = "/api/metrics/cluster/slot-stats"
checks.not_a_server_error.expected-statuses = ["2xx", "3xx", "4xx", "501"]
"""


@pytest.fixture
def served(
    server_factory: ServerFactory,
    shared_postgres: dict[str, Any],
    tmp_path: Path,
    search_module: Path,
) -> Iterator[tuple[str, Path]]:
    # With a search engine loaded, so the vector search routes answer from it (a server
    # without one answers them 501, as documented, which the fuzzer counts as a 5xx).
    watched: RunningServer = server_factory.start(
        "valkey", config={"loadmodule": str(search_module)}
    )
    env = service_env(watched, tmp_path / "data", **shared_postgres)
    with replica_process(env, tmp_path / "serve.log") as service:
        yield service.url, service.log_path


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
    config = tmp_path / "schemathesis.toml"
    config.write_text(DOCUMENTED_501S)
    command = [
        str(Path(sys.executable).parent / "st"),
        "--config-file", str(config),
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
