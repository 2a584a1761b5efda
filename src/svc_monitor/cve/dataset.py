"""The CVE dataset: its file format, the copy shipped in the package, version matching.

The shipped copy (dataset.json beside this module) is built by scripts/build_cve_dataset.py
from the gathered facts; an update fetched from CVE_DATASET_URL has the same format and
replaces it only when it parses whole (`parse_dataset` raises DatasetInvalid otherwise).

Matching: an advisory applies when `introduced <= version < fixed` for one of its ranges
(a range without `fixed` has no fixed release yet). Versions compare as `packaging` orders
them (kit/versions.py): 8.0.0-rc1 < 8.0.0-rc2 < 8.0.0 < 8.0.1, and 7.2 == 7.2.0. Advisories of a
module (component other than "server") are never matched: the engine's version says nothing
about a module's, so they are reported as unverifiable.
"""

import json
from datetime import date
from importlib import resources
from typing import Any, Literal

from packaging.version import Version
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from svc_monitor.cve.models import (
    Advisory,
    Dataset,
    EndOfLife,
    Engine,
    EolCycle,
    Finding,
    Range,
    ScanResult,
)
from svc_monitor.kit.versions import server_version

SERVER = "server"
EOL_SEVERITY: Literal["medium"] = "medium"


class DatasetInvalid(ValueError):
    """A dataset document that does not have the expected shape."""


class UnreadableVersion(ValueError):
    """A version string that is not a version: the scan is skipped, the dataset refused."""


def version_key(text: str) -> Version:
    version = server_version(text)
    if version is None:
        raise UnreadableVersion(f"not a version: {text[:40]!r}")
    return version


# --- the file format ---


class _Strict(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class _RangeIn(_Strict):
    introduced: str
    fixed: str | None


class _AdvisoryIn(_Strict):
    id: str = Field(min_length=1, max_length=64)
    engine: Engine
    component: str = Field(min_length=1, max_length=64)
    summary: str = Field(max_length=2000)
    severity: Literal["critical", "high", "medium", "low"]
    cvss: float | None = Field(default=None, ge=0, le=10)
    kev: bool
    affected: list[_RangeIn] = Field(min_length=1)
    ghsa: str | None = None


class _CycleIn(_Strict):
    engine: Engine
    cycle: str = Field(pattern=r"^\d{1,4}\.\d{1,4}$")
    released: date | None = None
    supportEnds: date | None = None
    eol: date | None = None


class _EndOfLifeIn(_Strict):
    sources: dict[str, str]
    cycles: list[_CycleIn]


class _DatasetIn(_Strict):
    format: Literal[1]
    generated: date
    advisories: list[_AdvisoryIn] = Field(min_length=1)
    endOfLife: _EndOfLifeIn


def parse_dataset(document: Any) -> Dataset:
    """The dataset in `document` (parsed JSON); DatasetInvalid when any part is wrong."""
    try:
        parsed = _DatasetIn.model_validate(document)
        for advisory in parsed.advisories:
            for r in advisory.affected:
                version_key(r.introduced)
                if r.fixed is not None:
                    version_key(r.fixed)
    except (ValidationError, UnreadableVersion) as exc:
        raise DatasetInvalid(str(exc).splitlines()[0] if str(exc) else "invalid") from exc
    return Dataset(
        generated=parsed.generated,
        advisories=tuple(
            Advisory(
                id=a.id,
                engine=a.engine,
                component=a.component,
                summary=a.summary,
                severity=a.severity,
                cvss=a.cvss,
                kev=a.kev,
                affected=tuple(Range(r.introduced, r.fixed) for r in a.affected),
                ghsa=a.ghsa,
            )
            for a in parsed.advisories
        ),
        eol_cycles=tuple(
            EolCycle(c.engine, c.cycle, c.released, c.supportEnds, c.eol)
            for c in parsed.endOfLife.cycles
        ),
        eol_sources=dict(parsed.endOfLife.sources),
    )


def shipped_text() -> str:
    return resources.files("svc_monitor.cve").joinpath("dataset.json").read_text("utf-8")


def shipped_dataset() -> Dataset:
    return parse_dataset(json.loads(shipped_text()))


# --- matching ---


def _affects(advisory: Advisory, version: Version) -> Range | None:
    for r in advisory.affected:
        if version_key(r.introduced) <= version and (
            r.fixed is None or version < version_key(r.fixed)
        ):
            return r
    return None


def end_of_life(dataset: Dataset, engine: Engine, version: str, *, today: date) -> EndOfLife:
    major, minor = (*version_key(version).release, 0)[:2]
    cycle = f"{major}.{minor}"
    found = next((c for c in dataset.eol_cycles if c.engine == engine and c.cycle == cycle), None)
    if found is None:
        return EndOfLife(cycle, "unknown", None, None)
    source = dataset.eol_sources.get(engine)
    status: Literal["end_of_life", "supported"] = (
        "end_of_life" if found.eol is not None and found.eol <= today else "supported"
    )
    return EndOfLife(cycle, status, found.eol, source)


def scan(dataset: Dataset, engine: Engine, version: str, *, today: date) -> ScanResult:
    """What `dataset` says about `engine` at `version`. Raises UnreadableVersion."""
    key = version_key(version)
    findings: list[Finding] = []
    unverifiable: list[Advisory] = []
    for advisory in dataset.advisories:
        if advisory.engine != engine:
            continue
        if advisory.component != SERVER:
            unverifiable.append(advisory)
            continue
        hit = _affects(advisory, key)
        if hit is not None:
            findings.append(
                Finding(
                    id=advisory.id,
                    kind=advisory.kind,
                    severity=advisory.severity,
                    kev=advisory.kev,
                    cvss=advisory.cvss,
                    fixed_in=hit.fixed,
                    summary=advisory.summary,
                    ghsa=advisory.ghsa,
                )
            )
    eol = end_of_life(dataset, engine, version, today=today)
    if eol.status == "end_of_life":
        findings.append(_eol_finding(engine, eol))
    return ScanResult(engine, version, tuple(findings), tuple(unverifiable), eol)


def _eol_finding(engine: Engine, eol: EndOfLife) -> Finding:
    name = "Valkey" if engine == "valkey" else "Redis"
    return Finding(
        id=f"EOL-{engine}-{eol.cycle}",
        kind="end_of_life",
        severity=EOL_SEVERITY,
        kev=False,
        cvss=None,
        fixed_in=None,
        summary=(
            f"{name} {eol.cycle} reached its end of life on {eol.eol}: it gets no more "
            f"fixes, security fixes included. Upgrade to a supported version. "
            f"Source: {eol.source}"
        ),
    )
