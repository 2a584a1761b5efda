"""What `diagnose` returns, and the units every finding is written in.

Sizes are binary (1 MB = 1024 * 1024 bytes), as Valkey and Redis read `maxmemory 100mb`, so
a limit set as 100mb reads back as "100 MB". Times are UTC ISO 8601 to the second.
"""

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

Severity = Literal["critical", "warning", "info"]
SEVERITY_ORDER: dict[Severity, int] = {"critical": 0, "warning": 1, "info": 2}


def utc(ms: float) -> str:
    """A wall-clock time in milliseconds since the epoch, as UTC ISO 8601."""
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def size(value: float) -> str:
    for unit, scale in (("GB", 1024**3), ("MB", 1024**2), ("KB", 1024)):
        if abs(value) >= scale:
            return f"{value / scale:.1f} {unit}".replace(".0 ", " ")
    return f"{value:.0f} B"


def micros(value: float) -> str:
    """A duration given in microseconds (the unit of SLOWLOG), in the unit that reads best."""
    if value >= 1_000_000:
        return f"{value / 1_000_000:.2f} s"
    if value >= 1000:
        return f"{value / 1000:.1f} ms".replace(".0 ", " ")
    return f"{value:.0f} µs"


def span(ms: float) -> str:
    """A span of time in milliseconds, as hours, minutes or days."""
    seconds = ms / 1000
    if seconds >= 2 * 86400:
        return f"{seconds / 86400:.1f} days"
    if seconds >= 2 * 3600:
        return f"{seconds / 3600:.1f} h"
    if seconds >= 120:
        return f"{seconds / 60:.0f} min"
    return f"{seconds:.0f} s"


@dataclass(frozen=True)
class Problem:
    """One current problem on one instance: what it is, the numbers that show it, and what
    to do next. `score` orders problems of the same severity (0-100, higher first)."""

    severity: Severity
    title: str
    evidence: tuple[str, ...]
    next_step: str
    source: str
    connection: str
    score: float

    def sort_key(self) -> tuple[int, float, str]:
        return (SEVERITY_ORDER[self.severity], -self.score, self.title)

    def to_dict(self) -> dict[str, Any]:
        return {
            "severity": self.severity,
            "title": self.title,
            "evidence": list(self.evidence),
            "nextStep": self.next_step,
            "source": self.source,
            "connection": self.connection,
            "score": round(self.score, 1),
        }


@dataclass(frozen=True)
class Diagnosis:
    """The ranked problems of one instance or of the fleet. `problems` holds the top ones,
    `more` counts those left out; `skipped` says which sources this install does not offer
    (a licence tier) and `unchecked` which ones failed to answer."""

    scope: str
    checked_at: float
    connections: tuple[str, ...]
    problems: tuple[Problem, ...]
    more: int = 0
    skipped: tuple[str, ...] = ()
    unchecked: tuple[str, ...] = field(default=())

    def counts(self) -> dict[Severity, int]:
        counts: dict[Severity, int] = {"critical": 0, "warning": 0, "info": 0}
        for problem in self.problems:
            counts[problem.severity] += 1
        return counts

    def to_dict(self) -> dict[str, Any]:
        return {
            "scope": self.scope,
            "checkedAt": utc(self.checked_at),
            "connections": list(self.connections),
            "problems": [p.to_dict() for p in self.problems],
            "more": self.more,
            "skipped": list(self.skipped),
            "unchecked": list(self.unchecked),
        }

    def to_text(self) -> str:
        fleet = len(self.connections) != 1
        lines = [f"# Diagnosis of {self.scope} at {utc(self.checked_at)}"]
        if not self.problems:
            lines.append("")
            lines.append("No current problem found in the sources checked.")
        for rank, problem in enumerate(self.problems, start=1):
            where = f"[{problem.connection}] " if fleet else ""
            lines += ["", f"{rank}. **{problem.severity.upper()}** {where}{problem.title}"]
            lines += [f"   - {item}" for item in problem.evidence]
            lines.append(f"   - Next step: {problem.next_step}")
        if self.more:
            lines += ["", f"... and {self.more} more problem(s) of lower rank, not shown."]
        if self.skipped or self.unchecked:
            lines.append("")
            lines += [f"- Skipped: {note}" for note in self.skipped]
            lines += [f"- Could not check {note}" for note in self.unchecked]
        return "\n".join(lines)
