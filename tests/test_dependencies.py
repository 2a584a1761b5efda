"""Every runtime dependency in pyproject.toml is something the service uses: an install
carries nothing src/ never imports (httpx sat there unused while only the tests needed it)."""

import ast
import tomllib
from collections.abc import Iterator, Mapping
from importlib.metadata import PackageNotFoundError, distribution, packages_distributions
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src" / "svc_monitor"

# Used without an import statement: each is named to the library that loads it, in a string
# that src/ must contain, so an entry outlives its use no longer than the string does.
USED_WITHOUT_IMPORT = {
    # uvicorn.Config(loop="uvloop", http="httptools") in cli.py
    "uvloop": '"uvloop"',
    "httptools": '"httptools"',
    # uvicorn's WebSocket protocol (console/socket_protocol.py) runs on it
    "websockets": "websockets_sansio_impl",
    # SQLAlchemy's dialects, chosen by the storage URL's scheme (storage/database.py)
    "asyncpg": "postgresql+asyncpg",
    "sqlalchemy-libsql": "sqlite+libsql",
    # Starlette's request.form() parses multipart licence uploads with it
    "python-multipart": "multipart/form-data",
}


def runtime_dependencies() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return {canonicalize_name(Requirement(spec).name) for spec in project["dependencies"]}


def imported_modules() -> set[str]:
    """Every absolute module src/ imports, at module level or inside a function."""
    found: set[str] = set()
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module)
    return found


def modules_of(name: str) -> Iterator[str]:
    """The dotted module names a distribution installs (google.rpc.status_pb2 ...)."""
    for file in distribution(name).files or ():
        if file.suffix in (".py", ".so", ".pyd"):
            parts = [*file.parts[:-1], file.name.split(".", 1)[0]]
            yield ".".join(p for p in parts if p != "__init__")


def providers(module: str, owners: Mapping[str, list[str]]) -> set[str]:
    """The distributions `module` is imported from. A top-level name several distributions
    share (google, opentelemetry) is told apart by the files each installs."""
    candidates = owners.get(module.split(".", 1)[0], [])
    if len(candidates) <= 1:
        return {canonicalize_name(c) for c in candidates}
    return {
        canonicalize_name(c)
        for c in candidates
        if any(m == module or m.startswith(module + ".") for m in modules_of(c))
    }


class TestRuntimeDependencies:
    def test_every_one_is_imported_by_src(self):
        owners = packages_distributions()
        used = {d for module in imported_modules() for d in providers(module, owners)}
        unused = runtime_dependencies() - used - set(USED_WITHOUT_IMPORT)
        assert not unused, f"runtime dependencies nothing in src/ imports: {sorted(unused)}"

    def test_each_exception_is_still_needed(self):
        text = "\n".join(path.read_text() for path in SRC.rglob("*.py"))
        for name, evidence in USED_WITHOUT_IMPORT.items():
            assert canonicalize_name(name) in runtime_dependencies(), name
            assert evidence in text, f"{name}: src/ no longer says {evidence}"

    def test_every_one_is_installed(self):
        # The mapping above reads installed metadata: a missing one would pass unseen.
        for name in runtime_dependencies():
            try:
                distribution(name)
            except PackageNotFoundError:
                raise AssertionError(f"{name} is not installed; run make install") from None
