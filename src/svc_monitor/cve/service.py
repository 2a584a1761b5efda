"""CVE and end-of-life scanning of every connection's engine version.

Versions arrive through the one pipe: polled INFO observations (`observe`, a consumer of
the pipe: `valkey_version` present means Valkey and is the version scanned; a Valkey's
`redis_version` 7.2.4 is never used) and the push receiver's pushed versions
(`observe_facts`, ServerVersionFacts, which already set aside a Valkey's 7.2.4
`redis.version`: docs/features/otlp-push-and-traces.md#engine-versions). A connection is
scanned when its version first arrives or changes, every 6 hours, and after a dataset
update. Each scan replaces the stored one; an advisory not stored before for that
connection is new and publishes one CveDetected (webhook `cve.detected`), so rescans
and restarts never repeat it.
"""

import asyncio
import contextlib
import logging
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

from svc_monitor.connections.models import Connection
from svc_monitor.connections.service import ConnectionService
from svc_monitor.cve.dataset import UnreadableVersion, end_of_life, scan
from svc_monitor.cve.models import SEVERITY_RANK, Advisory, Engine
from svc_monitor.cve.schemas import (
    CveFindingsRead,
    DatasetRead,
    EndOfLifeRead,
    FindingRead,
    UnverifiableRead,
)
from svc_monitor.cve.store import CveStore, StoredScan
from svc_monitor.cve.updates import DatasetSource
from svc_monitor.engine.info import detect_engine, engine_version
from svc_monitor.event_types.detection import CveDetected
from svc_monitor.events import EventBus
from svc_monitor.pipe.facts import Facts, ServerVersionFacts
from svc_monitor.pipe.observation import Observation

logger = logging.getLogger(__name__)

RESCAN_EVERY_MS = 6 * 3_600_000  # every 6 hours (docs/features/cve-scanning.md#when)
TICK_S = 60.0  # the loop's look at due rescans, dataset updates and removed connections
SEVERITIES = ("critical", "high", "medium", "low")
PUSH_MISSING = "redis.version (for Valkey: valkey.version and db.system.name=valkey)"


@dataclass(slots=True)
class _Known:
    """The version last seen for a connection and when it was last scanned."""

    engine: Engine
    version: str
    pushed: bool
    scanned_at_ms: int = 0


@dataclass(frozen=True, slots=True)
class Summary:
    """What the Prometheus families show for one scanned connection."""

    by_severity: Counter[str]
    kev: int


class CveService:
    """Scans versions against the dataset, stores findings, answers the routes."""

    def __init__(
        self,
        store: CveStore,
        source: DatasetSource,
        *,
        connections: ConnectionService,
        bus: EventBus,
        update_interval_ms: int,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._store = store
        self.source = source
        self._connections = connections
        self._bus = bus
        self._update_interval_ms = update_interval_ms
        self._clock = clock
        self._known: dict[str, _Known] = {}
        self._due: set[str] = set()
        self._wake = asyncio.Event()
        self._summaries: dict[str, Summary] = {}
        self._addresses: dict[str, str] = {}  # connection id -> host:port, the metric label
        self._lock = asyncio.Lock()  # one scan at a time: the new-finding check is read-write

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)

    def _today(self) -> date:
        return datetime.fromtimestamp(self._clock(), UTC).date()

    # --- versions in ---

    def observe(self, observation: Observation) -> None:
        """As an observation consumer of the pipe: cheap unless the version moved."""
        if observation.pushed or observation.node is not None:
            return  # push versions come as ServerVersionFacts; nodes share the seed's
        info = observation.info
        if info.is_carried("server"):
            # Read with the full INFO only: a version changes with a restart, and the first
            # pass on a new connection reads the full INFO
            # (docs/features/polling-and-history.md#info-cadence).
            return
        version = engine_version(info)
        if version is None:
            return
        engine: Engine = detect_engine(info)
        known = self._known.get(observation.connection_id)
        if known is not None and (known.engine, known.version) == (engine, version):
            return
        self._known[observation.connection_id] = _Known(engine, version, pushed=False)
        self._due.add(observation.connection_id)
        self._wake.set()

    def observe_facts(self, connection_id: str, facts: Facts) -> Awaitable[None] | None:
        """As a facts consumer of the pipe: a pushed version, put by the receiver on first
        arrival, on change and every 6 h, is scanned at once."""
        if not isinstance(facts, ServerVersionFacts):
            return None
        return self._scan_pushed(connection_id, facts.engine, facts.version)

    async def _scan_pushed(self, connection_id: str, engine: str, version: str) -> None:
        checked: Engine = "valkey" if engine == "valkey" else "redis"
        self._known[connection_id] = _Known(checked, version, pushed=True)
        try:
            await self.scan(connection_id)
        except Exception:  # storage hiccup: the next change or rescan tries again
            logger.exception("CVE scan of pushed %s failed", connection_id)

    def forget(self, connection_id: str) -> None:
        """No longer watched (removed, or edited): the next version seen is scanned afresh.
        Stored findings stay until the connection is gone, so a rescan finds nothing new."""
        self._known.pop(connection_id, None)
        self._due.discard(connection_id)

    # --- scanning ---

    async def scan(self, connection_id: str) -> int:
        """Scan the connection's known version now; the number of new findings."""
        known = self._known.get(connection_id)
        if known is None:
            return 0
        async with self._lock:
            dataset = self.source.dataset
            try:
                result = scan(dataset, known.engine, known.version, today=self._today())
            except UnreadableVersion as exc:
                logger.info("not scanning %s: %s", connection_id, exc)
                return 0
            now = self._now_ms()
            new = await self._store.save(
                connection_id,
                engine=known.engine,
                version=known.version,
                scanned_at=now,
                dataset_generated=dataset.generated.isoformat(),
                findings=result.findings,
            )
            known.scanned_at_ms = now
        counted = [f for f in result.findings if f.kind != "end_of_life"]
        self._summaries[connection_id] = Summary(
            Counter(f.severity for f in counted), sum(f.kev for f in counted)
        )
        if connection_id not in self._addresses:
            await self._refresh_addresses()
        for finding in new:
            if finding.kind == "end_of_life":
                continue  # a finding of its own, on the page and in the API; not a CVE event
            self._bus.publish(
                CveDetected(
                    connection_id=connection_id,
                    advisory_id=finding.id,
                    severity=finding.severity,
                    cvss=finding.cvss,
                    kev=finding.kev,
                    engine=known.engine,
                    version=known.version,
                    fixed_in=finding.fixed_in,
                    summary=finding.summary,
                    ghsa=finding.ghsa,
                )
            )
        return len(new)

    async def start(self) -> None:
        """Before the loop: the adopted dataset and the stored scans' metrics."""
        await self.source.load_stored()
        for stored in await self._store.all():
            self._summaries[stored.connection_id] = _summary_of(stored)
        await self._refresh_addresses()

    async def run(self) -> None:
        """Scans as versions arrive, 6-hourly rescans and dataset updates, until cancelled."""
        await self.start()
        loop = asyncio.get_running_loop()
        next_update = next_tick = 0.0
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(TICK_S):
                    await self._wake.wait()
            self._wake.clear()
            await self.scan_due()
            if loop.time() >= next_update:
                next_update = loop.time() + self._update_interval_ms / 1000
                if await self.source.update() == "updated":
                    await self.rescan_all()
            if loop.time() >= next_tick:
                next_tick = loop.time() + TICK_S
                await self._refresh_addresses()

    async def scan_due(self) -> None:
        """One pass: scan every connection whose version moved or whose scan is 6 h old."""
        now = self._now_ms()
        for connection_id, known in list(self._known.items()):
            # Push connections' 6-hourly rescans are the receiver's (ServerVersionFacts).
            if not known.pushed and now - known.scanned_at_ms >= RESCAN_EVERY_MS:
                self._due.add(connection_id)
        due, self._due = self._due, set()
        for connection_id in due:
            try:
                await self.scan(connection_id)
            except Exception:  # storage hiccup: the next change or rescan tries again
                logger.exception("CVE scan of %s failed", connection_id)

    async def rescan_all(self) -> None:
        """After a dataset update: what it says about every version known now."""
        self._due.update(self._known)
        await self.scan_due()

    async def _refresh_addresses(self) -> None:
        connections = await self._connections.list()
        self._addresses = {c.id: f"{c.host}:{c.port}" for c in connections}
        for gone in [i for i in self._summaries if i not in self._addresses]:
            del self._summaries[gone]
            self._known.pop(gone, None)

    # --- reads ---

    def _dataset_read(self) -> DatasetRead:
        today = self._today()
        return DatasetRead(
            generated=self.source.dataset.generated.isoformat(),
            ageDays=self.source.age_days(today),
            stale=self.source.stale(today),
            origin=self.source.origin,
        )

    async def findings(self, connection: Connection) -> CveFindingsRead:
        stored = await self._store.get(connection.id)
        if stored is None:
            return self._waiting(connection)
        engine: Engine = "valkey" if stored.engine == "valkey" else "redis"
        dataset = self.source.dataset
        try:
            eol = end_of_life(dataset, engine, stored.version, today=self._today())
            eol_read: EndOfLifeRead | None = EndOfLifeRead(
                cycle=eol.cycle,
                status=eol.status,
                eolDate=eol.eol.isoformat() if eol.eol else None,
                source=eol.source,
            )
        except UnreadableVersion:
            eol_read = None
        findings = sorted((_finding_read(r) for r in stored.findings), key=_order)
        unverifiable = [
            _unverifiable_read(a)
            for a in dataset.advisories
            if a.engine == engine and a.component != "server"
        ]
        return CveFindingsRead(
            connectionId=connection.id,
            status="scanned",
            engine=engine,
            version=stored.version,
            scannedAt=stored.scanned_at,
            missingAttribute=None,
            message=None,
            endOfLife=eol_read,
            findings=findings,
            unverifiable=unverifiable,
            dataset=self._dataset_read(),
        )

    def _waiting(self, connection: Connection) -> CveFindingsRead:
        missing = None
        if connection.pushed:
            held = self._connections.push_status(connection)
            # Detected as Valkey (db.system.name or valkey.* metrics): only valkey.version.
            valkey = held is not None and held.engine == "valkey"
            missing = held.version_attribute if held is not None and valkey else PUSH_MISSING
            message = (
                "Engine version unknown: none has been pushed yet. Set the resource attribute "
                f"{missing} with a resource processor in the Collector (action upsert)."
            )
        else:
            message = "Not scanned yet: waiting for the first INFO read of this connection."
        return CveFindingsRead(
            connectionId=connection.id,
            status="waiting_for_version",
            engine=None,
            version=None,
            scannedAt=None,
            missingAttribute=missing,
            message=message,
            endOfLife=None,
            findings=[],
            unverifiable=[],
            dataset=self._dataset_read(),
        )

    # --- what the Prometheus families show (prometheus/families/cve.py) ---

    def summaries(self) -> Iterator[tuple[str, str, "Summary"]]:
        """(connection id, host:port, summary) of every scanned connection still
        registered."""
        for connection_id, summary in self._summaries.items():
            address = self._addresses.get(connection_id)
            if address is not None:
                yield connection_id, address, summary

    def dataset_stale(self) -> bool:
        return self.source.stale(self._today())


def _summary_of(stored: StoredScan) -> Summary:
    counted = [r for r in stored.findings if r.kind != "end_of_life"]
    return Summary(Counter(r.severity for r in counted), sum(bool(r.kev) for r in counted))


def _url(advisory_id: str, ghsa: str | None) -> str | None:
    if advisory_id.startswith("CVE-"):
        return f"https://nvd.nist.gov/vuln/detail/{advisory_id}"
    if ghsa:
        return f"https://github.com/advisories/{ghsa}"
    return None


def _finding_read(row: Any) -> FindingRead:
    return FindingRead(
        id=row.finding_id,
        kind=row.kind,
        severity=row.severity,
        kev=bool(row.kev),
        cvss=row.cvss,
        fixedIn=row.fixed_in,
        summary=row.summary,
        ghsa=row.ghsa,
        url=_url(row.finding_id, row.ghsa),
        firstSeenAt=int(row.first_seen_at),
    )


def _unverifiable_read(advisory: Advisory) -> UnverifiableRead:
    return UnverifiableRead(
        id=advisory.id,
        component=advisory.component,
        severity=advisory.severity,
        kev=advisory.kev,
        cvss=advisory.cvss,
        fixedIn=[r.fixed for r in advisory.affected],
        summary=advisory.summary,
        url=_url(advisory.id, advisory.ghsa),
    )


def _order(finding: FindingRead) -> tuple[bool, int, float, str]:
    """KEV first, then severity, then CVSS (highest first), then id."""
    return (not finding.kev, SEVERITY_RANK[finding.severity], -(finding.cvss or 0), finding.id)
