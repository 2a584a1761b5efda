"""The CVE dataset and what a scan finds, as plain frozen dataclasses."""

from dataclasses import dataclass
from datetime import date
from typing import Literal

Engine = Literal["redis", "valkey"]
Severity = Literal["critical", "high", "medium", "low"]
# cve: an advisory with a CVE id; advisory: one without (a GHSA only); end_of_life: the
# engine's minor version is past its end-of-life date.
FindingKind = Literal["cve", "advisory", "end_of_life"]
SEVERITY_RANK: dict[str, int] = {"critical": 0, "high": 1, "medium": 2, "low": 3}


@dataclass(frozen=True, slots=True)
class Range:
    """introduced <= version < fixed; `fixed` None: no fixed release known."""

    introduced: str
    fixed: str | None


@dataclass(frozen=True, slots=True)
class Advisory:
    id: str
    engine: Engine
    component: str  # "server", or the module it is about (RedisBloom, valkey-bloom ...)
    summary: str
    severity: Severity
    cvss: float | None
    kev: bool  # on CISA's Known Exploited Vulnerabilities catalog
    affected: tuple[Range, ...]
    ghsa: str | None = None

    @property
    def kind(self) -> FindingKind:
        return "cve" if self.id.startswith("CVE-") else "advisory"


@dataclass(frozen=True, slots=True)
class EolCycle:
    """One minor version line of an engine and its support dates (None: none announced)."""

    engine: Engine
    cycle: str  # "7.2"
    released: date | None
    support_ends: date | None
    eol: date | None


@dataclass(frozen=True, slots=True)
class Dataset:
    generated: date
    advisories: tuple[Advisory, ...]
    eol_cycles: tuple[EolCycle, ...]
    eol_sources: dict[str, str]  # engine -> where its end-of-life dates come from


@dataclass(frozen=True, slots=True)
class Finding:
    """One advisory (or end of life) that applies to a scanned version."""

    id: str
    kind: FindingKind
    severity: Severity
    kev: bool
    cvss: float | None
    fixed_in: str | None  # the first fixed release on the scanned version's line
    summary: str
    ghsa: str | None = None


@dataclass(frozen=True, slots=True)
class EndOfLife:
    """The scanned version's line: `status` end_of_life, supported, or unknown (not sourced)."""

    cycle: str
    status: Literal["end_of_life", "supported", "unknown"]
    eol: date | None
    source: str | None


@dataclass(frozen=True, slots=True)
class ScanResult:
    engine: Engine
    version: str
    findings: tuple[Finding, ...]  # cves, advisories and the end-of-life finding
    unverifiable: tuple[Advisory, ...]  # module advisories: the version cannot tell
    end_of_life: EndOfLife
