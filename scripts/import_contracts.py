"""Import-linter contract types of our own.

Domain boundaries: domains reach each other only through their public modules.

A domain (a package such as `webhooks` or `console.monitor`) keeps its store, its routes
and its helpers to itself; another package may import only its `service`, `models` and
`schemas` (modules, or packages of that name, at any depth: `auth.broker.service`), and a
route (an `api`, `*_api` or `web` module) also its `dependencies`. The composition roots,
which build every store and service, are exempt, and so are the modules named in
`composition` at any depth (a domain's `part.py`: the fragment of the composition that
builds that domain, parts.py).

Routes only: a web framework is imported by the routes (and the composition roots that
mount them), never below them: services, stores, models, the pipe and the infrastructure
stay plain Python that a test or another process can use without an app. The
`composition` modules (a domain's `part.py`, which hands over its routers) are exempt too.

Configured in pyproject.toml and run by `make lint` (lint-imports).
"""

from dataclasses import dataclass
from typing import Any, cast

import grimp
from importlinter import Contract, ContractCheck, fields, output


def _strings(value: Any) -> list[str]:
    """A contract's list option as read (import-linter swaps the fields for their values)."""
    return list(cast("list[str] | None", value) or [])


def is_route(module: str, route_names: tuple[str, ...]) -> bool:
    """A module named, or inside a package named, for routes (`api`, `web`, `*_api` ...)."""
    return any(p in route_names or p.endswith("_api") for p in module.split(".")[1:])


@dataclass(frozen=True, order=True)
class _Reach:
    importer: str
    imported: str
    line_numbers: tuple[int, ...]


class DomainBoundaries(Contract):
    type_name = "domain_boundaries"

    domains = fields.ListField(subfield=fields.StringField())
    public = fields.ListField(subfield=fields.StringField())
    route_public = fields.ListField(subfield=fields.StringField(), required=False)
    routes = fields.ListField(subfield=fields.StringField(), required=False)
    exempt = fields.ListField(subfield=fields.StringField(), required=False)
    composition = fields.ListField(subfield=fields.StringField(), required=False)

    def check(self, graph: grimp.ImportGraph, verbose: bool) -> ContractCheck:
        root = _strings(self.session_options["root_packages"])[0]
        domains = sorted((f"{root}.{d}" for d in _strings(self.domains)), key=len, reverse=True)
        exempt = {f"{root}.{m}" for m in _strings(self.exempt)}
        reaches = []
        for importer in sorted(graph.modules):
            if _within(importer, exempt) or _composes(importer, _strings(self.composition)):
                continue
            own = _domain_of(importer, domains)
            for imported in graph.find_modules_directly_imported_by(importer):
                other = _domain_of(imported, domains)
                if other is None or other == own or self._allowed(importer, imported, other):
                    continue
                reaches.append(_reach(graph, importer, imported))
        return ContractCheck(kept=not reaches, metadata={"reaches": sorted(reaches)})

    def render_broken_contract(self, check: ContractCheck) -> None:
        _render(
            check,
            "Reach another domain through its service, models or schemas; "
            "move what both need there, or into kit/.",
        )

    def _allowed(self, importer: str, imported: str, domain: str) -> bool:
        inside = imported[len(domain) + 1 :].split(".") if imported != domain else []
        public = set(_strings(self.public))
        if self._is_route(importer):
            public |= set(_strings(self.route_public))
        # `auth.broker.service` is auth's (the broker's) service; `schemas/` may be a package.
        return any(part in public for part in inside)

    def _is_route(self, module: str) -> bool:
        return is_route(module, tuple(_strings(self.routes)))


def _reach(graph: grimp.ImportGraph, importer: str, imported: str) -> _Reach:
    details = graph.get_import_details(importer=importer, imported=imported)
    return _Reach(importer, imported, tuple(sorted(d["line_number"] for d in details)))


def _render(check: ContractCheck, guidance: str) -> None:
    for reach in check.metadata["reaches"]:
        lines = ", ".join(str(n) for n in reach.line_numbers)
        output.print_error(f"{reach.importer} -> {reach.imported} (l. {lines})")
    output.new_line()
    output.print(guidance)


def _domain_of(module: str, domains: list[str]) -> str | None:
    return next((d for d in domains if module == d or module.startswith(d + ".")), None)


def _composes(module: str, names: list[str]) -> bool:
    """A composition fragment: a module whose own name is one of `names` (`x.y.part`)."""
    return module.rsplit(".", 1)[-1] in names


def _within(module: str, packages: set[str]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


class RoutesOnly(Contract):
    type_name = "routes_only"

    packages = fields.ListField(subfield=fields.StringField())
    routes = fields.ListField(subfield=fields.StringField())
    exempt = fields.ListField(subfield=fields.StringField(), required=False)
    composition = fields.ListField(subfield=fields.StringField(), required=False)

    def check(self, graph: grimp.ImportGraph, verbose: bool) -> ContractCheck:
        root = _strings(self.session_options["root_packages"])[0]
        exempt = {f"{root}.{m}" for m in _strings(self.exempt)}
        composition = _strings(self.composition)
        routes = tuple(_strings(self.routes))
        reaches = []
        for package in _strings(self.packages):
            for importer in sorted(graph.find_modules_that_directly_import(package)):
                if not importer.startswith(root + ".") or _within(importer, exempt):
                    continue
                if _composes(importer, composition):
                    continue
                if is_route(importer, routes):
                    continue
                reaches.append(_reach(graph, importer, package))
        return ContractCheck(kept=not reaches, metadata={"reaches": sorted(reaches)})

    def render_broken_contract(self, check: ContractCheck) -> None:
        _render(
            check,
            "Keep the web framework in the routes (api.py, dependencies, web/): a service "
            "raises errors.py's errors and returns plain values.",
        )
