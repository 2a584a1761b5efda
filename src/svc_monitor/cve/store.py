"""The last scan of each connection and its findings, each with the time it was first seen.

One row per connection in `cve_scans` (the engine and version scanned, and when) and one
per current finding in `cve_findings`. A rescan keeps the rows of findings still present
(so their first-seen time stays), adds the new ones and deletes those no longer matched
(an upgrade fixed them). Rows outlive a restart: the API and the page answer from here.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Connection,
    Float,
    PrimaryKeyConstraint,
    Row,
    String,
    Table,
    Text,
    delete,
    select,
)

from svc_monitor.cve.models import Finding
from svc_monitor.storage.columns import connection_id_column
from svc_monitor.storage.database import Database
from svc_monitor.storage.metadata import metadata

cve_scans = Table(
    "cve_scans",
    metadata,
    connection_id_column(nullable=False),
    Column("engine", String(16), nullable=False),
    Column("version", String(64), nullable=False),
    Column("scanned_at", BigInteger, nullable=False),  # epoch ms
    Column("dataset_generated", String(10), nullable=False),  # ISO date of the dataset used
    PrimaryKeyConstraint("connection_id"),
)

cve_findings = Table(
    "cve_findings",
    metadata,
    connection_id_column(nullable=False),
    Column("finding_id", String(64), nullable=False),
    Column("kind", String(16), nullable=False),
    Column("severity", String(16), nullable=False),
    Column("kev", Boolean, nullable=False),
    Column("cvss", Float, nullable=True),
    Column("fixed_in", String(64), nullable=True),
    Column("ghsa", String(64), nullable=True),
    Column("summary", Text, nullable=False),
    Column("first_seen_at", BigInteger, nullable=False),  # epoch ms
    PrimaryKeyConstraint("connection_id", "finding_id"),
)


@dataclass(frozen=True, slots=True)
class StoredScan:
    connection_id: str
    engine: str
    version: str
    scanned_at: int
    dataset_generated: str
    findings: list[Row[Any]]


class CveStore:
    """Writes and reads the stored scans."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def save(
        self,
        connection_id: str,
        *,
        engine: str,
        version: str,
        scanned_at: int,
        dataset_generated: str,
        findings: Sequence[Finding],
    ) -> list[Finding]:
        """Replace the connection's scan in one transaction; the findings it did not hold
        before (the new ones, in `findings` order)."""

        def write(conn: Connection) -> list[Finding]:
            f = cve_findings.c
            held = {
                r.finding_id
                for r in conn.execute(select(f.finding_id).where(f.connection_id == connection_id))
            }
            wanted = {finding.id for finding in findings}
            gone = held - wanted
            if gone:
                conn.execute(
                    delete(cve_findings).where(
                        f.connection_id == connection_id, f.finding_id.in_(gone)
                    )
                )
            new = [finding for finding in findings if finding.id not in held]
            if new:
                conn.execute(
                    cve_findings.insert(),
                    [_finding_row(connection_id, x, scanned_at) for x in new],
                )
            conn.execute(delete(cve_scans).where(cve_scans.c.connection_id == connection_id))
            conn.execute(
                cve_scans.insert().values(
                    connection_id=connection_id,
                    engine=engine,
                    version=version,
                    scanned_at=scanned_at,
                    dataset_generated=dataset_generated,
                )
            )
            return new

        return await self._db.run(write)

    async def get(self, connection_id: str) -> StoredScan | None:
        scan = await self._db.fetch_one(
            select(cve_scans).where(cve_scans.c.connection_id == connection_id)
        )
        if scan is None:
            return None
        findings = await self._db.fetch_all(
            select(cve_findings).where(cve_findings.c.connection_id == connection_id)
        )
        return _stored(scan, list(findings))

    async def all(self) -> list[StoredScan]:
        """Every stored scan (the metrics' start after a restart)."""
        scans = await self._db.fetch_all(select(cve_scans))
        findings: dict[str, list[Row[Any]]] = {}
        for row in await self._db.fetch_all(select(cve_findings)):
            findings.setdefault(row.connection_id, []).append(row)
        return [_stored(s, findings.get(s.connection_id, [])) for s in scans]


def _stored(scan: Row[Any], findings: list[Row[Any]]) -> StoredScan:
    return StoredScan(
        connection_id=scan.connection_id,
        engine=scan.engine,
        version=scan.version,
        scanned_at=int(scan.scanned_at),
        dataset_generated=scan.dataset_generated,
        findings=findings,
    )


def _finding_row(connection_id: str, finding: Finding, at_ms: int) -> dict[str, Any]:
    return {
        "connection_id": connection_id,
        "finding_id": finding.id,
        "kind": finding.kind,
        "severity": finding.severity,
        "kev": finding.kev,
        "cvss": finding.cvss,
        "fixed_in": finding.fixed_in,
        "ghsa": finding.ghsa,
        "summary": finding.summary,
        "first_seen_at": at_ms,
    }
