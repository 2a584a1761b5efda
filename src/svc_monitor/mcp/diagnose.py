"""`diagnose`: the current problems of one instance or of the whole fleet, ranked, each with
its evidence and the next step, read from the service's own REST API.

Sources: the connection's state (down or unreachable), INFO (memory against maxmemory,
fragmentation, evictions, writes rejected with OOM, clients against maxclients, blocked
clients, replication link and lag, against the strictest thresholds set on the
connection's webhooks where they are stricter than the defaults), the usedMemory
forecast (time to the limit), unresolved anomalies of the last hour (Pro; skipped with a
note on Community), CVE and end-of-life findings, and slow-log bursts of the last ten
minutes.

Ranking: severity first (critical, warning, info), then a score from 0 to 100 that each
source defines (see diagnosis_info and diagnosis_sources): the share of a limit in use, how
soon a forecast limit comes, the highest CVSS x10, the slowest command and how many. Ties go
by title, so the order is stable. Only the top `limit` problems are returned, with a count
of the rest.

A source that fails (503, timeout, an error) becomes "could not check <source>: <reason>";
a source the licence does not include becomes a skipped note. Neither stops the diagnosis.
"""

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from svc_monitor.mcp.caller_protocol import ApiCaller, ToolRefused, refusal
from svc_monitor.mcp.diagnosis_info import InfoChecks, Levels
from svc_monitor.mcp.diagnosis_model import Diagnosis, Problem, utc
from svc_monitor.mcp.diagnosis_sources import (
    anomaly_problems,
    cve_problems,
    forecast_problems,
    slowlog_problems,
)
from svc_monitor.mcp.untrusted import data

logger = logging.getLogger(__name__)

ALL = "all"
DEFAULT_LIMIT = 20
MAX_LIMIT = 100
# A source that has not answered in this long is reported as unchecked, so one slow
# instance cannot hold up the answer for the fleet.
SOURCE_TIMEOUT_S = 10.0
# How many instances are read at once on a fleet-wide diagnosis.
FLEET_CONCURRENCY = 8

Source = Callable[[ApiCaller, str, str, float], Awaitable[list[Problem]]]


async def info_problems(api: ApiCaller, connection: str, name: str, now: float) -> list[Problem]:
    # The whole default INFO: Redis before 7.0 refuses several sections in one call.
    info = await api.get("/api/metrics/info", connection=connection)
    sections: Mapping[str, Mapping[str, Any]] = info.get("sections", {})
    server_time = sections.get("server", {}).get("server_time_usec")
    at = int(server_time) / 1000 if isinstance(server_time, int) else now
    levels = await _levels(api, connection)
    return InfoChecks(sections, connection=name, at=at, levels=levels).problems()


async def _levels(api: ApiCaller, connection: str) -> Levels:
    """The alert levels the user set on this connection's webhooks (and the global ones).
    Reading webhooks may be refused to a member; the product's defaults apply then."""
    try:
        webhooks = await api.get("/api/webhooks", connection=connection)
    except Exception as error:
        if refusal(error) is None:
            raise
        return Levels()
    return Levels.of_webhooks(webhooks if isinstance(webhooks, list) else [])


SOURCES: tuple[tuple[str, Source], ...] = (
    ("INFO", info_problems),
    ("forecast", forecast_problems),
    ("anomalies", anomaly_problems),
    ("CVE findings", cve_problems),
    ("slow log", slowlog_problems),
)
# Sources that send commands to the instance: a pushed (OTLP) connection has none of them.
LIVE_ONLY = frozenset({"slow log"})


class _Findings:
    """What the sources found across connections, before ranking."""

    def __init__(self) -> None:
        self.problems: list[Problem] = []
        self.skipped: dict[str, str] = {}
        self.unchecked: list[str] = []


async def diagnose(
    api: ApiCaller,
    connection: str | None = None,
    *,
    limit: int = DEFAULT_LIMIT,
    clock: Callable[[], float] = time.time,
) -> Diagnosis:
    """Diagnose `connection` (id or name; None = the default connection; "all" = every
    connection), returning at most `limit` problems."""
    if isinstance(limit, bool) or not 1 <= limit <= MAX_LIMIT:
        raise ValueError(f"limit: must be between 1 and {MAX_LIMIT}, got {limit!r}")
    now = clock() * 1000
    listed = await api.get("/api/connections")
    targets = _targets(listed, connection)
    findings = _Findings()
    gate = asyncio.Semaphore(FLEET_CONCURRENCY)

    async def one(entry: Mapping[str, Any]) -> None:
        async with gate:
            await _diagnose_one(api, entry, now, findings)

    await asyncio.gather(*(one(entry) for entry in targets))
    ranked = sorted(findings.problems, key=Problem.sort_key)
    names = tuple(str(entry.get("name")) for entry in targets)
    return Diagnosis(
        scope="the fleet" if connection == ALL else names[0],
        checked_at=now,
        connections=names,
        problems=tuple(ranked[:limit]),
        more=max(0, len(ranked) - limit),
        skipped=tuple(f"{source}: {why}" for source, why in findings.skipped.items()),
        unchecked=tuple(sorted(findings.unchecked)),
    )


def _targets(listed: Sequence[Mapping[str, Any]], connection: str | None) -> list[Any]:
    if connection == ALL:
        return list(listed)
    for entry in listed:
        if (connection is None and entry.get("isDefault")) or connection in (
            entry.get("id"),
            entry.get("name"),
        ):
            return [entry]
    known = ", ".join(sorted(str(e.get("name")) for e in listed)) or "none"
    wanted = "a default connection" if connection is None else repr(connection)
    raise ToolRefused(f"connection: there is no {wanted} (known: {known})", 404)


async def _diagnose_one(
    api: ApiCaller, entry: Mapping[str, Any], now: float, findings: _Findings
) -> None:
    conn_id, name = str(entry.get("id")), str(entry.get("name"))
    down = _down(entry, name)
    if down is not None:
        # Every live source would only repeat that the instance does not answer.
        findings.problems.append(down)
        return
    sources = SOURCES
    if entry.get("source") == "push":
        sources = tuple((label, source) for label, source in SOURCES if label not in LIVE_ONLY)
        for label in sorted(LIVE_ONLY):
            findings.skipped.setdefault(label, "needs a live connection; pushed ones send none")
    results = await asyncio.gather(
        *(_guarded(source, api, conn_id, name, now) for _, source in sources),
        return_exceptions=True,
    )
    for (label, _), result in zip(sources, results, strict=True):
        if isinstance(result, list):
            findings.problems += result
        elif _licence_gate(result):
            findings.skipped.setdefault(label, _reason(result))
        else:
            findings.unchecked.append(f"{label} on {name}: {_reason(result)}")


async def _guarded(
    source: Source, api: ApiCaller, conn_id: str, name: str, now: float
) -> list[Problem]:
    async with asyncio.timeout(SOURCE_TIMEOUT_S):
        return await source(api, conn_id, name, now)


def _licence_gate(error: BaseException) -> bool:
    refused = refusal(error)
    return refused is not None and refused[0] in (402, 403) and "tier" in refused[1].lower()


def _reason(error: BaseException) -> str:
    refused = refusal(error)
    if refused is not None:
        return refused[1]
    if isinstance(error, TimeoutError):
        return f"no answer within {SOURCE_TIMEOUT_S:g} s"
    # Anything else is a bug or a transport failure: keep the trace for whoever runs us.
    logger.warning("diagnose source failed", exc_info=error)
    return f"{type(error).__name__}: {error}"[:300]


def _down(entry: Mapping[str, Any], name: str) -> Problem | None:
    engine = entry.get("engine") or {}
    status = engine.get("status")
    # "unknown" is a connection not yet tried; only a failed attempt says it is down.
    if entry.get("source") != "poll" or status != "disconnected":
        return None
    checked = engine.get("checkedAt")
    evidence = [
        f"state {status}: {data(engine.get('error') or None, missing='no answer')}"
        + (f" at {utc(checked)}" if checked else ""),
        f"address {entry.get('host')}:{entry.get('port')}",
    ]
    step = (
        "Check that the server is running and reachable from svc-monitor (process,"
        " network, credentials); test the connection under Settings, Connections."
    )
    return Problem(
        "critical", f"Instance {name} is {status}", tuple(evidence), step, "connection", name, 100.0
    )
