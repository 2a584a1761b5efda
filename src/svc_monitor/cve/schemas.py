"""Bodies of the CVE routes."""

from typing import Literal

from pydantic import BaseModel, Field


class FindingRead(BaseModel):
    """One advisory (or the end of life) that applies to the scanned version."""

    id: str = Field(
        description="CVE id, GHSA id for an advisory without one, or EOL-<engine>-<x.y>"
    )
    kind: Literal["cve", "advisory", "end_of_life"]
    severity: Literal["critical", "high", "medium", "low"]
    kev: bool = Field(description="on CISA's Known Exploited Vulnerabilities catalog")
    cvss: float | None
    fixedIn: str | None = Field(
        description="the first fixed release on the scanned version's line; null: none yet"
    )
    summary: str
    ghsa: str | None
    url: str | None
    firstSeenAt: int = Field(description="epoch ms of the scan that first found it")


class UnverifiableRead(BaseModel):
    """A module advisory: the engine's version cannot tell whether it applies."""

    id: str
    component: str = Field(description="the module (RedisBloom, RediSearch, valkey-bloom ...)")
    severity: Literal["critical", "high", "medium", "low"]
    kev: bool
    cvss: float | None
    fixedIn: list[str | None] = Field(description="the module's fixed releases, one per line")
    summary: str
    url: str | None


class EndOfLifeRead(BaseModel):
    cycle: str = Field(description="the scanned version's minor line, as 7.2")
    status: Literal["end_of_life", "supported", "unknown"] = Field(
        description="unknown: no sourced date for this line in the dataset"
    )
    eolDate: str | None = Field(description="ISO date; null while none is announced")
    source: str | None


class DatasetRead(BaseModel):
    generated: str = Field(description="ISO date the dataset was built")
    ageDays: int
    stale: bool = Field(description="older than CVE_DATASET_MAX_AGE_DAYS")
    origin: Literal["shipped", "updated"]


class CveFindingsRead(BaseModel):
    """The selected connection's last scan, or why there is none yet."""

    connectionId: str
    status: Literal["scanned", "waiting_for_version"]
    engine: Literal["redis", "valkey"] | None
    version: str | None
    scannedAt: int | None = Field(description="epoch ms of the last scan")
    missingAttribute: str | None = Field(
        description="push connections without a version: the resource attribute to set"
    )
    message: str | None
    endOfLife: EndOfLifeRead | None
    findings: list[FindingRead] = Field(description="KEV first, then by severity and CVSS")
    unverifiable: list[UnverifiableRead]
    dataset: DatasetRead
