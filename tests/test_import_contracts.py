"""The import contracts `make lint` runs (pyproject.toml, [tool.importlinter]) hold for the
tree, and each one catches the import it exists to forbid.

Each deliberate violation is written into a copy of the package, and lint-imports runs
over the copy with the project's own configuration: the contract that forbids it must
fail, naming the offending import.
"""

import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from scripts.import_contracts_gen import pyproject_text

from svc_monitor import domains

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


@dataclass(frozen=True)
class Violation:
    module: str  # relative to src/svc_monitor
    line: str  # appended to the module
    contract: str  # the name of the contract that must break
    shown: str  # what the report must name


VIOLATIONS = [
    Violation(
        "pipe/pipe.py",
        "import svc_monitor.polling.supervisor",
        "Layers: composition roots, routes, sources and exports, domains, the pipe",
        "svc_monitor.pipe.pipe -> svc_monitor.polling.supervisor",
    ),
    Violation(
        "pipe/live_state.py",
        "import svc_monitor.storage.database",
        "The pipe needs only the engine, the events and kit",
        "svc_monitor.pipe.live_state -> svc_monitor.storage.database",
    ),
    Violation(
        "cluster/service.py",
        "from svc_monitor.pipe.pipe import Pipe",
        "Only sources feed the pipe: no domain holds the Pipe",
        "svc_monitor.cluster.service -> svc_monitor.pipe.pipe",
    ),
    Violation(
        "detection/config_watch.py",
        "from svc_monitor.pipe.live_state import LiveState",
        "Live state is written only by the pipe: everything else reads it as a LiveView",
        "svc_monitor.detection.config_watch -> svc_monitor.pipe.live_state",
    ),
    Violation(
        "replicas/models.py",
        "from svc_monitor.forecast.service import ForecastService",
        "Layers: composition roots, routes, sources and exports, domains, the pipe",
        "svc_monitor.replicas.models -> svc_monitor.forecast.service",
    ),
    Violation(
        "kit/pem.py",
        "import svc_monitor.config",
        "Layers: composition roots, routes, sources and exports, domains, the pipe",
        "svc_monitor.kit.pem -> svc_monitor.config",
    ),
    Violation(
        "webhooks/signing.py",
        "from fastapi import Request",
        "No FastAPI or Starlette below the routes",
        "svc_monitor.webhooks.signing",
    ),
    Violation(
        "slowlog/service.py",
        "import fastapi",
        "No FastAPI or Starlette below the routes",
        "svc_monitor.slowlog.service -> fastapi",
    ),
    Violation(
        "forecast/service.py",
        "from svc_monitor.info_history.store import MetricsStore",
        "Another domain is reached only through its service, models and schemas",
        "svc_monitor.forecast.service -> svc_monitor.info_history.store",
    ),
    Violation(
        "console/cli/service.py",
        "from svc_monitor.console.monitor.store import MonitorStore",
        "Another domain is reached only through its service, models and schemas",
        "svc_monitor.console.cli.service -> svc_monitor.console.monitor.store",
    ),
    Violation(
        "mcp/server.py",
        "from svc_monitor.slowlog.service import SlowlogService",
        "The MCP server reaches the service only through its REST API",
        "svc_monitor.mcp.server -> svc_monitor.slowlog.service",
    ),
    Violation(
        "connections/models.py",
        "import svc_monitor.connections.service",
        "No package-level import cycles",
        "svc_monitor.connections",
    ),
]


def lint_imports(cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        cwd=cwd,
        env={"PYTHONPATH": str(cwd / "src"), "PATH": "/usr/bin:/bin", "COLUMNS": "200"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The package, the configuration and the contract types, outside the real tree."""
    copy = tmp_path_factory.mktemp("contracts")
    shutil.copytree(ROOT / "src" / "svc_monitor", copy / "src" / "svc_monitor")
    shutil.copytree(ROOT / "scripts", copy / "scripts")
    shutil.copy(ROOT / "pyproject.toml", copy / "pyproject.toml")
    return copy


def test_the_tree_keeps_every_contract(checkout: Path):
    done = lint_imports(checkout)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "broken" not in done.stdout.lower().replace("0 broken", "")


@pytest.mark.parametrize("violation", VIOLATIONS, ids=[v.module for v in VIOLATIONS])
def test_a_forbidden_import_breaks_its_contract(checkout: Path, violation: Violation):
    module = checkout / "src" / "svc_monitor" / violation.module
    original = module.read_text()
    module.write_text(original + f"\n{violation.line}  # noqa\n")
    try:
        done = lint_imports(checkout)
    finally:
        module.write_text(original)
    report = done.stdout + done.stderr
    assert done.returncode != 0, report
    assert f"{violation.contract}" in report
    broken = report[report.index("Broken contracts") :]
    assert violation.contract.split(":")[0] in broken
    assert violation.shown in " ".join(broken.split()), broken


def test_a_new_domain_is_kept_once_named_in_domains_py(
    checkout: Path, monkeypatch: pytest.MonkeyPatch
):
    """The Layers contract is exhaustive: a package it does not list fails it, until its
    name is in domains.py and the contracts are written again."""
    package = checkout / "src" / "svc_monitor" / "zebra"
    package.mkdir()
    (package / "__init__.py").write_text("")
    pyproject = checkout / "pyproject.toml"
    original = pyproject.read_text()
    try:
        unnamed = lint_imports(checkout)
        monkeypatch.setattr(domains, "FEATURE", (*domains.FEATURE, "zebra"))
        pyproject.write_text(pyproject_text(original))
        named = lint_imports(checkout)
    finally:
        shutil.rmtree(package)
        pyproject.write_text(original)
    assert unnamed.returncode != 0, unnamed.stdout
    assert "not listed as layers" in unnamed.stdout
    assert "svc_monitor.zebra" in unnamed.stdout
    assert named.returncode == 0, named.stdout + named.stderr
