"""The dependency rules of STYLE.md section 2, checked on the source tree."""

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "svc_monitor"
ROOT_MODULES = {
    "app",
    "cli",
    "config",
    "errors",
    "events",
    "services",
    "embedded",
    "api_params",
    "features",
    "__main__",
}
INFRASTRUCTURE = {"engine", "storage"}
COMPOSITION_ROOTS = {
    "svc_monitor.app",
    "svc_monitor.cli",
    "svc_monitor.services",
    "svc_monitor.features",
}


def modules() -> list[tuple[str, Path]]:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        parts = path.relative_to(SRC.parent).with_suffix("").parts
        found.append((".".join(p for p in parts if p != "__init__"), path))
    return found


def imports_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def domain_of(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "svc_monitor" or len(parts) < 3 or parts[1] in ROOT_MODULES:
        return None
    return parts[1]


ALL = modules()


@pytest.mark.parametrize(("module", "path"), ALL, ids=[m for m, _ in ALL])
class TestImportRules:
    def test_no_other_domains_api_or_store(self, module: str, path: Path):
        if module in COMPOSITION_ROOTS:
            return
        own = domain_of(module)
        for name in imports_of(path):
            other = domain_of(name)
            if other and other != own and name.split(".")[2:3] in (["api"], ["store"]):
                # app_meta is storage infrastructure, not a domain store
                pytest.fail(f"{module} imports {name}: go through that domain's service")

    def test_services_and_stores_know_no_http(self, module: str, path: Path):
        leaf = module.rsplit(".", 1)[-1]
        if leaf not in {"service", "store", "models"} and domain_of(module) not in INFRASTRUCTURE:
            return
        web = {n for n in imports_of(path) if n.split(".")[0] in {"fastapi", "starlette"}}
        assert not web, f"{module} imports {sorted(web)}"

    def test_infrastructure_does_not_reach_into_domains(self, module: str, path: Path):
        if domain_of(module) not in INFRASTRUCTURE:
            return
        for name in imports_of(path):
            other = domain_of(name)
            assert other is None or other in INFRASTRUCTURE, f"{module} imports {name}"
