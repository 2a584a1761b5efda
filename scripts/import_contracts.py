"""An import-linter contract type of our own: domains reach each other only through their
public modules.

A domain (a package such as `webhooks` or `console.monitor`) keeps its store, its routes
and its helpers to itself; another package may import only its `service`, `models` and
`schemas` (modules, or packages of that name, at any depth: `auth.broker.service`), and a
route (an `api`, `*_api` or `web` module) also its `dependencies`. The composition roots, which build every store and service, are
exempt. Configured in pyproject.toml and run by `make lint` (lint-imports).
"""

from dataclasses import dataclass

import grimp
from importlinter import Contract, ContractCheck, fields, output


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

    def check(self, graph: grimp.ImportGraph, verbose: bool) -> ContractCheck:
        root = self.session_options["root_packages"][0]
        domains = sorted((f"{root}.{d}" for d in self.domains), key=len, reverse=True)
        exempt = {f"{root}.{m}" for m in self.exempt or ()}
        reaches = []
        for importer in sorted(graph.modules):
            if _within(importer, exempt):
                continue
            own = _domain_of(importer, domains)
            for imported in graph.find_modules_directly_imported_by(importer):
                other = _domain_of(imported, domains)
                if other is None or other == own or self._allowed(importer, imported, other):
                    continue
                details = graph.get_import_details(importer=importer, imported=imported)
                lines = tuple(sorted(d["line_number"] for d in details))
                reaches.append(_Reach(importer, imported, lines))
        return ContractCheck(kept=not reaches, metadata={"reaches": sorted(reaches)})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for reach in check.metadata["reaches"]:
            lines = ", ".join(str(n) for n in reach.line_numbers)
            output.print_error(f"{reach.importer} -> {reach.imported} (l. {lines})")
        output.new_line()
        output.print(
            "Reach another domain through its service, models or schemas; "
            "move what both need there, or into kit/."
        )

    def _allowed(self, importer: str, imported: str, domain: str) -> bool:
        inside = imported[len(domain) + 1 :].split(".") if imported != domain else []
        public = set(self.public)
        if self._is_route(importer):
            public |= set(self.route_public or ())
        # `auth.broker.service` is auth's (the broker's) service; `schemas/` may be a package.
        return any(part in public for part in inside)

    def _is_route(self, module: str) -> bool:
        """A module named, or inside a package named, for routes (`api`, `web`, `*_api`)."""
        names = self.routes or ()
        return any(p in names or p.endswith("_api") for p in module.split(".")[1:])


def _domain_of(module: str, domains: list[str]) -> str | None:
    return next((d for d in domains if module == d or module.startswith(d + ".")), None)


def _within(module: str, packages: set[str]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)
