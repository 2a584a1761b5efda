"""The sources `diagnose` reads besides INFO: forecasts, anomalies, CVE and end-of-life
findings, and the slow log. Each reads one REST route and returns problems; a failure
propagates to the caller, which reports it as a source it could not check.

Scores (0-100): forecasts by how soon the limit comes, anomalies by their z-score, CVEs by
the highest CVSS (x10), slow commands by the slowest duration and how many there were.
"""

import math
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from svc_monitor.mcp.caller_protocol import ApiCaller
from svc_monitor.mcp.diagnosis_model import Problem, Severity, micros, size, span, utc
from svc_monitor.mcp.untrusted import command_line, data

HOUR_MS = 3600 * 1000
FORECAST_CRITICAL_MS = 24 * HOUR_MS
FORECAST_WARNING_MS = 7 * 24 * HOUR_MS
FORECAST_INFO_MS = 30 * 24 * HOUR_MS
ANOMALY_LOOKBACK_MS = HOUR_MS
SLOWLOG_LOOKBACK_MS = 10 * 60 * 1000
SLOWLOG_READ = "128"
# What counts as slow whatever the server's slowlog-log-slower-than: 10 ms blocks every
# other client of a single-threaded server for as long.
SLOW_US = 10_000
SLOW_BURST = 3
SLOW_ONE_WARNING_US = 100_000
SLOW_CRITICAL_US = 1_000_000
# svc-monitor's own polls show up in the slow log when the threshold is low; not the user's.
OWN_CLIENT_NAME = "svc-monitor"
CVE_EVIDENCE = 3


async def forecast_problems(
    api: ApiCaller, connection: str, name: str, now: float
) -> list[Problem]:
    forecast = await api.get("/api/metric-forecasting/usedMemory/forecast", connection=connection)
    left = forecast.get("timeToLimitMs")
    if forecast.get("insufficientData") or left is None or left > FORECAST_INFO_MS:
        return []
    severity: Severity = (
        "critical"
        if left <= FORECAST_CRITICAL_MS
        else "warning"
        if left <= FORECAST_WARNING_MS
        else "info"
    )
    evidence = [
        f"usedMemory {size(forecast.get('currentValue') or 0)} of"
        f" {size(forecast.get('ceiling') or 0)}, growing {size(forecast.get('growthRate', 0))}"
        f"/h; limit reached in {span(left)} (around {utc(now + left)})",
    ]
    step = "Find what grows (key patterns, largest keys) or raise maxmemory before then."
    score = 100 * (1 - min(left, FORECAST_INFO_MS) / FORECAST_INFO_MS)
    return [
        Problem(
            severity,
            f"Memory limit reached in {span(left)}",
            tuple(evidence),
            step,
            "forecast",
            name,
            score,
        )
    ]


async def anomaly_problems(api: ApiCaller, connection: str, name: str, now: float) -> list[Problem]:
    params = {"resolved": "false", "since": str(int(now - ANOMALY_LOOKBACK_MS)), "limit": "100"}
    events = await api.get("/api/anomaly/events", connection=connection, params=params)
    latest: dict[str, Mapping[str, Any]] = {}
    counts: dict[str, int] = defaultdict(int)
    for event in events:
        metric = str(event.get("metric"))
        counts[metric] += 1
        if metric not in latest or event.get("timestamp", 0) > latest[metric].get("timestamp", 0):
            latest[metric] = event
    found: list[Problem] = []
    for metric, event in latest.items():
        severity: Severity = (
            "critical"
            if event.get("severity") == "critical"
            else "info"
            if event.get("severity") == "info"
            else "warning"
        )
        z = abs(float(event.get("zScore") or 0))
        value, baseline = (
            _reading(metric, event.get("value")),
            _reading(metric, event.get("baseline")),
        )
        evidence = [
            f"{metric} {value} against a baseline of {baseline}"
            f" (z-score {z:.1f}) at {utc(event.get('timestamp', now))}",
            f"{counts[metric]} unresolved anomaly event(s) on {metric} in the last hour",
        ]
        step = "Look at the correlated anomaly groups and resolve the anomaly once explained."
        found.append(
            Problem(
                severity,
                f"Anomaly on {metric}: {event.get('anomalyType', 'unusual value')}, {value}"
                f" against a usual {baseline}",
                tuple(evidence),
                step,
                "anomalies",
                name,
                min(100.0, 10 * z),
            )
        )
    return found


def _reading(metric: str, value: Any) -> str:
    if not isinstance(value, int | float):
        return str(value)
    if "memory" in metric:
        return size(value)
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.2f}"


async def cve_problems(api: ApiCaller, connection: str, name: str, now: float) -> list[Problem]:
    report = await api.get("/api/cve/findings", connection=connection)
    if report.get("status") != "scanned":
        return []
    product = f"{report.get('engine')} {data(report.get('version'))}"
    found = [_cve_problem(report, product, name)] if _cves(report) else []
    eol = report.get("endOfLife") or {}
    if eol.get("status") == "end_of_life":
        evidence = (
            f"{product}: release line {data(eol.get('cycle'))} is past end of life"
            f" ({eol.get('eolDate') or 'date unknown'}), scanned at"
            f" {utc(report.get('scannedAt') or now)}",
        )
        found.append(
            Problem(
                "warning",
                f"{product} is past end of life",
                evidence,
                "Plan an upgrade to a supported release line.",
                "cve",
                name,
                50,
            )
        )
    return found


def _cves(report: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [f for f in report.get("findings", []) if f.get("kind") in ("cve", "advisory")]


def _cve_problem(report: Mapping[str, Any], product: str, name: str) -> Problem:
    findings = sorted(_cves(report), key=lambda f: -(f.get("cvss") or 0))
    by_severity: dict[str, int] = defaultdict(int)
    for finding in findings:
        by_severity[str(finding.get("severity"))] += 1
    kev = any(f.get("kev") for f in findings)
    severity: Severity = (
        "critical"
        if kev or by_severity["critical"]
        else "warning"
        if by_severity["high"]
        else "info"
    )
    tally = ", ".join(f"{n} {s}" for s, n in by_severity.items())
    evidence = [
        f"{len(findings)} known vulnerabilities in {product} ({tally}), scanned at"
        f" {utc(report.get('scannedAt') or 0)}"
    ]
    evidence += [
        f"{f.get('id')} (CVSS {f.get('cvss')}, fixed in {f.get('fixedIn') or 'no release'})"
        f"{' [known exploited]' if f.get('kev') else ''}: {f.get('summary')}"
        for f in findings[:CVE_EVIDENCE]
    ]
    fixed = [str(f["fixedIn"]) for f in findings if f.get("fixedIn")]
    target = max(fixed, key=_version_key) if fixed else None
    step = (f"Upgrade to {target} or later" if target else "Upgrade to a current release") + (
        "; see the CVE findings for the full list."
    )
    score = 10 * max((f.get("cvss") or 0) for f in findings)
    return Problem(
        severity,
        f"{len(findings)} known CVEs in {product}",
        tuple(evidence),
        step,
        "cve",
        name,
        score,
    )


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) if part.isdigit() else 0 for part in version.split("."))


async def slowlog_problems(api: ApiCaller, connection: str, name: str, now: float) -> list[Problem]:
    entries = await api.get(
        "/api/metrics/slowlog", connection=connection, params={"count": SLOWLOG_READ}
    )
    since = now - SLOWLOG_LOOKBACK_MS
    by_command: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for entry in entries:
        if entry.get("clientName") == OWN_CLIENT_NAME or entry.get("startedAt", 0) < since:
            continue
        if entry.get("duration", 0) >= SLOW_US:
            by_command[str(entry.get("command"))].append(entry)
    return [
        _slow_problem(command, slow, name)
        for command, slow in by_command.items()
        if len(slow) >= SLOW_BURST or max(e["duration"] for e in slow) >= SLOW_ONE_WARNING_US
    ]


def _slow_problem(command: str, slow: list[Mapping[str, Any]], name: str) -> Problem:
    slowest = max(slow, key=lambda e: e["duration"])
    total = sum(e["duration"] for e in slow)
    severity: Severity = (
        "critical"
        if slowest["duration"] >= SLOW_CRITICAL_US or total >= SLOW_CRITICAL_US
        else "warning"
    )
    first = min(e["startedAt"] for e in slow)
    shown = data(command)
    evidence = (
        f"{len(slow)} {shown} calls over {micros(SLOW_US)} between {utc(first)} and"
        f" {utc(max(e['startedAt'] for e in slow))}, {micros(total)} in all",
        f"slowest {micros(slowest['duration'])} at {utc(slowest['startedAt'])}:"
        f" {command_line(slowest.get('args', []))}"
        f" from {data(slowest.get('clientAddress'), missing='unknown client')}",
    )
    step = (
        f"Look at the slow log patterns for {shown} and the client sending it; each call"
        " blocks every other client for its duration."
    )
    score = min(100.0, slowest["duration"] / 10_000 + 10 * math.log10(len(slow) + 1))
    return Problem(
        severity,
        f"Slow {shown} burst: {len(slow)} calls, slowest {micros(slowest['duration'])}",
        evidence,
        step,
        "slowlog",
        name,
        score,
    )
