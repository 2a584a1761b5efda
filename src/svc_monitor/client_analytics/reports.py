"""Stored and live client rows turned into response bodies; pure functions, no I/O."""

import statistics
from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any

from svc_monitor.client_analytics.schemas import (
    ActivityBucket,
    BufferAnomaly,
    ClientSnapshot,
    GroupCount,
    LiveClient,
)
from svc_monitor.engine.clients import ClientInfo
from svc_monitor.kit.records import from_attributes


def bucket(at: int, since: int, bucket_ms: int) -> int:
    return since + (at - since) // bucket_ms * bucket_ms


def max_by_bucket(rows: Sequence[Any], since: int, bucket_ms: int) -> dict[int, dict[str, int]]:
    result: dict[int, dict[str, int]] = defaultdict(dict)
    for row in rows:
        group = result[bucket(row.captured_at, since, bucket_ms)]
        key = row.key or ""
        group[key] = max(group.get(key, 0), row.clients)
    return result


def group_counts(rows: Sequence[Any], latest: int) -> list[GroupCount]:
    current: Counter[str] = Counter()
    peak: dict[str, int] = {}
    for row in rows:
        key = row.key or ""
        peak[key] = max(peak.get(key, 0), row.clients)
        if row.captured_at == latest:
            current[key] = row.clients
    groups = [GroupCount(key=k, current=current[k], peak=p) for k, p in peak.items()]
    return sorted(groups, key=lambda g: (-g.current, -g.peak, g.key))


def activity(rows: Sequence[Any], since: int, bucket_ms: int) -> list[ActivityBucket]:
    grouped: dict[int, list[Any]] = defaultdict(list)
    for row in rows:
        grouped[bucket(row.captured_at, since, bucket_ms)].append(row)
    buckets = []
    for t, members in sorted(grouped.items()):
        per_capture = Counter(r.captured_at for r in members)
        idles = [r.idle for r in members if r.idle is not None]
        buckets.append(
            ActivityBucket(
                t=t,
                captures=len(per_capture),
                uniqueClients=len({(r.client_id, r.addr) for r in members}),
                maxConnections=max(per_capture.values()),
                commands=dict(Counter(r.cmd or "" for r in members).most_common()),
                avgIdleSeconds=round(statistics.fmean(idles), 2) if idles else None,
                maxQbuf=max((r.qbuf for r in members if r.qbuf is not None), default=None),
                maxOmem=max((r.omem for r in members if r.omem is not None), default=None),
            )
        )
    return buckets


def idle_advice(avg_idle_s: float, occurrences: int) -> str:
    if avg_idle_s > 3600 and occurrences > 100:
        return "Zombie connection: consider closing it (CLIENT KILL) or fixing its owner"
    if avg_idle_s > 300 and occurrences > 50:
        return "Stale connection: review the connection pool's idle timeout and size"
    return "Monitor: the connection is occasionally idle"


def buffer_anomaly(row: Any, *, qbuf: int, omem: int) -> BufferAnomaly:
    reasons = []
    critical = False
    if row.qbuf is not None and row.qbuf >= qbuf:
        reasons.append(f"query buffer {row.qbuf} bytes >= {qbuf}")
        critical |= row.qbuf >= 10 * qbuf
    if row.omem is not None and row.omem >= omem:
        reasons.append(f"output memory {row.omem} bytes >= {omem}")
        critical |= row.omem >= 10 * omem
    return BufferAnomaly(
        snapshot=snapshot(row), severity="critical" if critical else "warning", reasons=reasons
    )


def snapshot(r: Any) -> ClientSnapshot:
    return from_attributes(ClientSnapshot, r, user=r.username, ageSeconds=r.age, idleSeconds=r.idle)


def live_client(c: ClientInfo) -> LiveClient:
    return from_attributes(LiveClient, c, clientId=c.id, ageSeconds=c.age, idleSeconds=c.idle)


def ip(addr: str) -> str:
    host, sep, _ = addr.rpartition(":")
    return host if sep else addr


def rounded(value: Any) -> float | None:
    return None if value is None else round(float(value), 2)
