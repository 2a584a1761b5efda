"""`compare`: one instance now against a window earlier, keeping only what changed
meaningfully, biggest change first.

"Before" and "now" are the first and last buckets of the INFO history over the window
(averaged over a few samples, so one noisy sample does not read as a change). When the
history is younger than the window, "before" is its earliest bucket, and the result says
so. A metric counts as changed when it moves by more than both its relative and its
absolute threshold (see METRICS); changes are ranked by the size of the relative change.
Besides the history: the slow-log rate (stored entries in the window against the window
before it) and a restart within the window (INFO uptime), which ranks first because it
explains the others.
"""

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from svc_monitor.mcp.caller_protocol import ApiCaller, refusal
from svc_monitor.mcp.diagnosis_model import size, span, utc
from svc_monitor.mcp.untrusted import data

MAX_WINDOW_MINUTES = 7 * 24 * 60
# Enough buckets to find both ends of the window, few enough to keep the answer small.
HISTORY_BUCKETS = "120"
SLOWLOG_READ = 10_000


@dataclass(frozen=True)
class Metric:
    key: str
    label: str
    unit: str
    min_relative: float
    min_absolute: float


METRICS: tuple[Metric, ...] = (
    Metric("usedMemory", "memory used", "bytes", 0.10, 1024**2),
    Metric("opsPerSec", "operations", "ops/s", 0.25, 50),
    Metric("connectedClients", "connected clients", "clients", 0.20, 5),
    Metric("blockedClients", "blocked clients", "clients", 0.0, 1),
    Metric("hitRatio", "hit ratio", "ratio", 0.0, 0.05),
    Metric("keys", "keys", "keys", 0.10, 100),
    Metric("expires", "keys with a TTL", "keys", 0.10, 100),
    Metric("connectedReplicas", "connected replicas", "replicas", 0.0, 1),
    Metric("cpuTotalPercent", "CPU", "%", 0.25, 10),
    Metric("netInputKbps", "network in", "kbit/s", 0.50, 100),
    Metric("netOutputKbps", "network out", "kbit/s", 0.50, 100),
)


def _show(value: float, unit: str) -> str:
    if unit == "bytes":
        return size(value)
    if unit == "ratio":
        return f"{100 * value:.1f} %"
    if unit == "%":
        return f"{value:.1f} %"
    whole = abs(value) >= 10 or value == int(value)
    return f"{value:,.0f} {unit}" if whole else f"{value:.1f} {unit}"


@dataclass(frozen=True)
class Change:
    """One metric, before -> now; `relative` is None when it started from zero."""

    metric: str
    label: str
    before: float | None
    now: float | None
    unit: str
    relative: float | None
    note: str = ""

    def magnitude(self) -> float:
        if self.metric == "restart":
            return math.inf
        return abs(self.relative) if self.relative is not None else 1.0

    def line(self) -> str:
        if self.before is None or self.now is None:
            return f"{self.label}: {self.note}"
        rel = f" ({self.relative:+.0%})" if self.relative is not None else " (from zero)"
        arrow = f"{_show(self.before, self.unit)} -> {_show(self.now, self.unit)}"
        return f"{self.label}: {arrow}{rel}{f'; {self.note}' if self.note else ''}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "label": self.label,
            "before": self.before,
            "now": self.now,
            "unit": self.unit,
            "relativeChange": None if self.relative is None else round(self.relative, 4),
            "note": self.note or None,
        }


@dataclass(frozen=True)
class Comparison:
    """What changed on one instance between `before_at` and `now_at` (ms)."""

    connection: str
    window_minutes: int
    before_at: float | None
    now_at: float | None
    changes: tuple[Change, ...]
    steady: int
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "connection": self.connection,
            "windowMinutes": self.window_minutes,
            "before": utc(self.before_at) if self.before_at else None,
            "now": utc(self.now_at) if self.now_at else None,
            "changes": [c.to_dict() for c in self.changes],
            "steadyMetrics": self.steady,
            "notes": list(self.notes),
        }

    def to_text(self) -> str:
        head = f"# {self.connection}: now against {self.window_minutes} min earlier"
        lines = [head]
        if self.before_at and self.now_at:
            lines.append(f"From {utc(self.before_at)} to {utc(self.now_at)}.")
        lines.append("")
        if self.changes:
            lines += [f"{n}. {c.line()}" for n, c in enumerate(self.changes, start=1)]
        else:
            lines.append("No meaningful change.")
        if self.steady:
            lines.append(f"\n{self.steady} other metric(s) steady.")
        lines += [f"- {note}" for note in self.notes]
        return "\n".join(lines)


async def compare(
    api: ApiCaller,
    connection: str | None = None,
    *,
    window_minutes: int = 60,
    clock: Callable[[], float] = time.time,
) -> Comparison:
    """Compare `connection` (id or name; None = the default) now with `window_minutes` ago."""
    if isinstance(window_minutes, bool) or not 1 <= window_minutes <= MAX_WINDOW_MINUTES:
        raise ValueError(
            f"window_minutes: must be between 1 and {MAX_WINDOW_MINUTES}, got {window_minutes!r}"
        )
    now = int(clock() * 1000)
    window_ms = window_minutes * 60_000
    start = now - window_ms
    points = await _history(api, connection, start, now)
    notes: list[str] = []
    if points and points[0]["t"] > start + window_ms / int(HISTORY_BUCKETS) * 2:
        # Younger history than the window: read it again at a finer grain from its start.
        points = await _history(api, connection, int(points[0]["t"]), now)
        if points:
            notes.append(f"history starts at {utc(points[0]['t'])}, within the window")
    name = await _name(api, connection)
    if len(points) < 2:
        notes.append(f"not enough history to compare ({len(points)} sample bucket(s))")
        return Comparison(name, window_minutes, None, None, (), 0, tuple(notes))
    before, latest = points[0], points[-1]
    changes = [c for m in METRICS if (c := _change(m, before, latest)) is not None]
    steady = sum(1 for m in METRICS if _value(before, m.key) is not None) - len(changes)
    try:
        changes += await _slowlog_change(api, connection, start, now, window_ms)
    except Exception as error:
        notes.append(f"could not check the slow-log rate: {_reason(error)}")
    try:
        changes += await _restart(api, connection, now - before["t"], notes)
    except Exception as error:
        notes.append(f"could not check for a restart: {_reason(error)}")
    changes.sort(key=lambda c: -c.magnitude())
    return Comparison(
        name, window_minutes, before["t"], latest["t"], tuple(changes), steady, tuple(notes)
    )


async def _history(
    api: ApiCaller, connection: str | None, start: int, end: int
) -> list[Mapping[str, Any]]:
    params = {"from": str(start), "to": str(end), "maxPoints": HISTORY_BUCKETS}
    series = await api.get("/api/metrics/history", connection=connection, params=params)
    points: list[Mapping[str, Any]] = series.get("points", [])
    return [p for p in points if p.get("samples")]


async def _name(api: ApiCaller, connection: str | None) -> str:
    for entry in await api.get("/api/connections"):
        if (connection is None and entry.get("isDefault")) or connection in (
            entry.get("id"),
            entry.get("name"),
        ):
            return str(entry.get("name"))
    return str(connection)


def _value(point: Mapping[str, Any], key: str) -> float | None:
    if key == "cpuTotalPercent":
        sys_, user = point.get("cpuSysPercent"), point.get("cpuUserPercent")
        return None if sys_ is None or user is None else float(sys_) + float(user)
    value = point.get(key)
    return None if value is None else float(value)


def _change(metric: Metric, before: Mapping[str, Any], now: Mapping[str, Any]) -> Change | None:
    old, new = _value(before, metric.key), _value(now, metric.key)
    if old is None or new is None:
        return None
    delta = new - old
    relative = delta / old if old else None
    if abs(delta) < metric.min_absolute or (
        relative is not None and abs(relative) < metric.min_relative
    ):
        return None
    return Change(metric.key, metric.label, old, new, metric.unit, relative)


async def _slowlog_change(
    api: ApiCaller, connection: str | None, start: int, now: int, window_ms: int
) -> list[Change]:
    async def count(since: int, until: int) -> int:
        params = {"from": str(since), "to": str(until), "limit": str(SLOWLOG_READ)}
        return len(
            await api.get("/api/slowlog-analytics/entries", connection=connection, params=params)
        )

    recent, earlier = await count(start, now), await count(start - window_ms, start - 1)
    metric = Metric("slowlogEntries", "slow-log entries per window", "entries", 0.5, 10)
    delta = recent - earlier
    if abs(delta) < metric.min_absolute or (earlier and abs(delta) / earlier < metric.min_relative):
        return []
    change = Change(
        metric.key,
        metric.label,
        float(earlier),
        float(recent),
        metric.unit,
        delta / earlier if earlier else None,
        note=f"the {span(window_ms)} before against the last {span(window_ms)}",
    )
    return [change]


async def _restart(
    api: ApiCaller, connection: str | None, compared_ms: float, notes: list[str]
) -> list[Change]:
    """A restart after the "before" point (a server started before the history began has
    not restarted in the comparison)."""
    info = await api.get("/api/metrics/info", connection=connection, params={"sections": "server"})
    server: Sequence[Any] | Mapping[str, Any] = info.get("sections", {}).get("server", {})
    if not isinstance(server, Mapping):
        return []
    uptime = server.get("uptime_in_seconds")
    version = data(server.get("valkey_version") or server.get("redis_version"))
    notes.append(f"version now {version}")
    # INFO truncates uptime to whole seconds: one second of slack.
    if isinstance(uptime, int) and (uptime + 1) * 1000 < compared_ms:
        return [
            Change(
                "restart",
                "restart",
                None,
                None,
                "",
                None,
                note=f"restarted {span(uptime * 1000)} ago, after the earlier point;"
                f" counters and memory started again from zero (version {version})",
            )
        ]
    return []


def _reason(error: Exception) -> str:
    """Why a secondary source failed; anything but a REST refusal is raised again, since it
    is a bug or a broken transport, not a fact about the instance."""
    refused = refusal(error)
    if refused is None:
        raise error
    return refused[1]
