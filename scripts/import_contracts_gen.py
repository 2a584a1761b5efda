"""The domain lists of pyproject.toml's import contracts, and the layer table of
docs/architecture.md, written from src/svc_monitor/domains.py so that neither can drift.

The contracts name the domains several times over (the Layers contract's domain layers,
the contracts forbidding every domain an import, the boundaries contract's domains). Each
of those lists sits in pyproject.toml between two marker comments,

    # generated: every domain (from src/svc_monitor/domains.py: python -m scripts....)
    ...
    # end generated: every domain

and `python -m scripts.import_contracts_gen` rewrites what is between them; everything else
in the contracts stays hand-written. A marker pair may be moved, or copied into a new
contract, and the next run fills it. The layer table of docs/architecture.md is then written
from the Layers contract as rewritten, between markers of the same kind. The stock `layers`
and `forbidden` contract types take only literal lists, hence generation rather than reading
domains.py at lint time. tests/test_import_contracts_gen.py fails while either file differs
from what this module writes.
"""

import re
import sys
import tomllib
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from svc_monitor import domains

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "svc_monitor"
COMMAND = "python -m scripts.import_contracts_gen"
PYPROJECT = "pyproject.toml"
ARCHITECTURE = "docs/architecture.md"
WIDTH = 100

# What each layer of the Layers contract is called and holds in the table, keyed by one
# module of the layer. The domain layers are found by their lists in domains.py instead, so
# adding or moving a domain needs nothing here.
LAYER_WORDS: dict[str, tuple[str, str]] = {
    "__main__": ("entry point", "`python -m svc_monitor`, which runs the command line"),
    "cli": ("command line", "the `svc-monitor` command"),
    "app": (
        "the app; the agent",
        "`create_app`: the object graph's routers mounted, its lifespan; `agent/`: the "
        "process beside an instance nobody can dial, which dials the service",
    ),
    "compose": (
        "composition roots",
        "the object graph: the core services and the core parts' list, the feature parts' "
        "list, what watches the instances (each domain's `part.py` is composition too)",
    ),
    "web": (
        "web and MCP",
        "the UI: one module per page in `web/routes/`, templates, static assets; the MCP "
        "server, a client of the REST API",
    ),
    "polling": (
        "sources and exports",
        "what feeds the pipe (the polls, the OTLP receiver `otlp/ingest/`), and what carries "
        "it out (the scrape, the OTLP export `otlp/export/`)",
    ),
    "api": (
        "route glue",
        "error responses, shared query parameters, the object graph's types, the `Part` and "
        "its registry",
    ),
    "pipe": (
        "the pipe",
        "Observation, facts, live state and its read-only view, health, pressure, poll "
        "counts, Pipe",
    ),
    "engine": ("infrastructure", "the wire to an instance; the database and migrations"),
    "config": (
        "foundations",
        "settings, the error tree, the bus and the event table, the list of domains",
    ),
    "kit": (
        "kit",
        "helpers with no domain: PEM and key checks, the secret box, address parsing, small "
        "JSON requests, the embedded Valkey, records built from rows whose names line up",
    ),
}
FEATURE_WORDS = ("feature domains", "one capability each: its routes, service, store, schemas")
BASE_WORDS = (
    "base domains",
    "what every feature stands on: the connections, users and roles, the licence, the "
    "replicas, the runtime settings, each with its routes, service, store",
)


def every_domain() -> list[str]:
    return sorted(domains.BASE + domains.FEATURE)


def bounded_domains() -> list[str]:
    """The boundaries contract's domains: a split domain's parts in its place."""
    found = []
    for name in every_domain():
        if name in domains.BOUNDARY_EXEMPT:
            continue
        found += [f"{name}.{part}" for part in domains.SPLIT.get(name, ())] or [name]
    return found


def _quoted(names: Iterable[str]) -> list[str]:
    return [f'"{name}"' for name in names]


def _wrapped(items: list[str], indent: str, *, separator: str = ", ", end: str = ",") -> list[str]:
    """The items on as few lines as fit WIDTH, each line ending in `end`."""
    lines: list[str] = []
    line = ""
    for item in items:
        candidate = f"{line}{separator}{item}" if line else item
        if line and len(indent) + len(candidate) + len(end) > WIDTH:
            lines.append(line + end)
            candidate = item
        line = candidate
    return [*lines, line + end] if line else lines


def _layer(names: Iterable[str], indent: str) -> list[str]:
    """One layer of independent modules as a TOML string; a long one continues its lines
    with a trailing backslash, which TOML trims together with the next line's indent."""
    names = list(names)
    text = f'"{" : ".join(names)}",'
    if len(indent) + len(text) <= WIDTH:
        return [text]
    parts = [f"{name} :" for name in names[:-1]] + [names[-1]]
    lines = _wrapped(parts, indent + "    ", separator=" ", end=" \\")
    lines[0] = '"""' + lines[0]
    lines[1:] = ["    " + line for line in lines[1:]]
    lines[-1] = lines[-1].removesuffix(" \\") + '""",'
    return lines


def _domain_layers(indent: str) -> list[str]:
    return [
        "# The feature domains (domains.FEATURE), each one capability over the base domains.",
        *_layer(domains.FEATURE, indent),
        "# The base domains (domains.BASE): none may import a feature domain.",
        *_layer(domains.BASE, indent),
    ]


def _every_domain(indent: str) -> list[str]:
    return _wrapped(_quoted(f"{PACKAGE}.{name}" for name in every_domain()), indent)


def _bounded_domains(indent: str) -> list[str]:
    return _wrapped(_quoted(bounded_domains()), indent)


# The blocks of pyproject.toml, by the name their markers give them.
CONTRACT_BLOCKS: dict[str, Callable[[str], list[str]]] = {
    "the domain layers": _domain_layers,
    "every domain": _every_domain,
    "the bounded domains": _bounded_domains,
}


def _fill(
    text: str,
    where: str,
    name: str,
    lines: Callable[[str], list[str]],
    *,
    source: str,
    close: str = "",
) -> str:
    """`text` with every `name` block's lines written anew (`close` ends an HTML comment)."""
    opening = re.compile(
        rf"^(?P<indent>[ \t]*)(?P<mark>#|<!--) generated: {re.escape(name)} \(.*\n", re.M
    )
    found = list(opening.finditer(text))
    if not found:
        raise ValueError(f"{where} has no `generated: {name}` block")
    pieces, done = [], 0
    for match in found:
        if match.start() < done:
            raise ValueError(f"{where}: a `generated: {name}` block has no end marker")
        ending = re.compile(
            rf"^[ \t]*{re.escape(match['mark'])} end generated: {re.escape(name)}"
            rf"{re.escape(close)}[ \t]*$",
            re.M,
        ).search(text, match.end())
        if ending is None:
            raise ValueError(f"{where}: the `generated: {name}` block has no end marker")
        indent = match["indent"]
        marker = f"{indent}{match['mark']} generated: {name} (from {source}: {COMMAND}){close}\n"
        body = "".join(f"{indent}{line}\n" if line else "\n" for line in lines(indent))
        pieces += [text[done : match.start()], marker, body]
        done = ending.start()
    return "".join([*pieces, text[done:]])


def pyproject_text(current: str) -> str:
    """pyproject.toml with every generated block written from domains.py."""
    for name, lines in CONTRACT_BLOCKS.items():
        current = _fill(current, PYPROJECT, name, lines, source="src/svc_monitor/domains.py")
    return current


def layers_contract(pyproject: str) -> list[list[str]]:
    """The Layers contract's layers, top first, each as its modules."""
    config: dict[str, Any] = tomllib.loads(pyproject)["tool"]["importlinter"]
    contract = next(
        c for c in config["contracts"] if c["type"] == "layers" and c["containers"] == [PACKAGE]
    )
    return [
        [name.strip().strip("()") for name in re.split(r"[:|]", layer)]
        for layer in contract["layers"]
    ]


def _words(modules: list[str]) -> tuple[str, str]:
    if set(modules) == set(domains.FEATURE):
        return FEATURE_WORDS
    if set(modules) == set(domains.BASE):
        return BASE_WORDS
    keys = [name for name in modules if name in LAYER_WORDS]
    if len(keys) != 1:
        raise ValueError(
            f"the layer {' : '.join(modules)} needs one entry in LAYER_WORDS "
            f"(scripts/import_contracts_gen.py), keyed by one of its modules"
        )
    return LAYER_WORDS[keys[0]]


def _package_cell(modules: list[str], root: Path) -> str:
    src = root / "src" / PACKAGE
    return ", ".join(f"`{m}/`" if (src / m).is_dir() else f"`{m}`" for m in modules)


def layer_table(pyproject: str, root: Path = ROOT) -> list[str]:
    """The Layers contract as a Markdown table, top layer first."""
    lines = ["| layer | packages | holds |", "|---|---|---|"]
    for modules in layers_contract(pyproject):
        title, holds = _words(modules)
        lines.append(f"| {title} | {_package_cell(modules, root)} | {holds} |")
    return lines


def architecture_text(current: str, pyproject: str, root: Path = ROOT) -> str:
    """docs/architecture.md with its layer table written from the Layers contract."""
    return _fill(
        current,
        ARCHITECTURE,
        "the layer table",
        lambda _indent: ["", *layer_table(pyproject, root), ""],
        source="the Layers contract of pyproject.toml",
        close=" -->",
    )


def write(root: Path = ROOT) -> list[str]:
    """Rewrite each file whose generated blocks differ from what domains.py gives; the files
    written."""
    pyproject = root / PYPROJECT
    architecture = root / ARCHITECTURE
    contracts = pyproject_text(pyproject.read_text(encoding="utf-8"))
    table = architecture_text(architecture.read_text(encoding="utf-8"), contracts, root)
    written = []
    for path, text in ((pyproject, contracts), (architecture, table)):
        if path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            written.append(str(path.relative_to(root)))
    return written


if __name__ == "__main__":
    for name in write(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT):
        print(f"wrote {name}")  # noqa: T201
