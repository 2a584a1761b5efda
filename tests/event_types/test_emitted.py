"""Every declared event type has a detector, and every event a detector publishes is
declared: read from the source tree, outside event_types/."""

import ast
import importlib
from functools import cache
from pathlib import Path

from svc_monitor.event_types.table import EVENT_TYPES
from svc_monitor.events import InstanceEvent

SRC = Path(__file__).resolve().parents[2] / "src" / "svc_monitor"
TABLE = SRC / "event_types"
# Instance events published for consumers other than webhooks and the OTLP event export:
# none today. One listed here is exempt from being declared in the table.
NOT_NOTIFICATIONS: frozenset[type[InstanceEvent]] = frozenset()


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(p for p in parts if p != "__init__")


def _constructed_names(tree: ast.Module) -> set[str]:
    """Names called in the module that it imports from svc_monitor or defines as a class."""
    called = {
        node.func.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    }
    ours: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("svc_monitor"):
            ours.update(alias.asname or alias.name for alias in node.names)
        elif isinstance(node, ast.ClassDef):
            ours.add(node.name)
    return called & ours


@cache
def published() -> dict[type[InstanceEvent], tuple[str, ...]]:
    """Each instance event class constructed in src outside the table, and where."""
    found: dict[type[InstanceEvent], list[str]] = {}
    for path in sorted(SRC.rglob("*.py")):
        if TABLE in path.parents or path.name == "__main__.py":
            continue
        names = _constructed_names(ast.parse(path.read_text()))
        if not names:
            continue
        module = importlib.import_module(_module_name(path))
        for name in names:
            value = getattr(module, name, None)
            if isinstance(value, type) and issubclass(value, InstanceEvent):
                found.setdefault(value, []).append(module.__name__)
    return {kind: tuple(where) for kind, where in found.items()}


def test_every_declared_type_has_a_publisher():
    missing = [e.name for e in EVENT_TYPES if e.source not in published()]
    assert not missing, f"no code outside event_types/ publishes the bus event of {missing}"


def test_every_published_instance_event_is_declared():
    declared = {e.source for e in EVENT_TYPES} | NOT_NOTIFICATIONS
    undeclared = {
        kind.__name__: where for kind, where in published().items() if kind not in declared
    }
    assert not undeclared, f"published but not in the event table: {undeclared}"


def test_the_scan_finds_the_detectors():
    # A guard on the scan itself: a few publishers it must see.
    where = {kind.__name__: modules for kind, modules in published().items()}
    assert "svc_monitor.pipe.health" in where["InstanceDown"]
    assert "svc_monitor.detection.readings" in where["MemoryReading"]
    assert "svc_monitor.cve.service" in where["CveDetected"]
