"""Bounded, readable tool output: units on numbers, ISO 8601 on times, and a limit on size.

Every tool answers in text an assistant can read and quote: a list shows at most
`limit` entries and at most `LIST_CHARS` characters, and says how many it left out; the
whole answer is cut at `MAX_CHARS`. Text from the monitored server is shown as data
(mcp/untrusted.py), each value cut short, so one long value never hides the entries.
"""

import datetime as dt
from collections.abc import Callable, Sequence
from typing import Any

from svc_monitor.mcp.untrusted import NOTICE, data

# About 1,500 tokens: enough for a summary and a page of entries, small enough that a
# dozen calls fit in an assistant's context.
MAX_CHARS = 6000
# What a list may take of it: the rest is room for the data notice and a summary line.
LIST_CHARS = MAX_CHARS - len(NOTICE) - 300
# A server's report (LATENCY DOCTOR, MEMORY DOCTOR) is cut inside its data markers.
REPORT_CHARS = MAX_CHARS - len(NOTICE) - 200
MAX_ENTRIES = 50
_MB = 1024 * 1024


def iso(epoch_ms: Any) -> str:
    """Milliseconds since the epoch as ISO 8601 (UTC); "unknown" for a missing value."""
    if not isinstance(epoch_ms, int | float) or isinstance(epoch_ms, bool):
        return "unknown"
    moment = dt.datetime.fromtimestamp(epoch_ms / 1000, tz=dt.UTC)
    return moment.isoformat(timespec="seconds").replace("+00:00", "Z")


def mb(size_bytes: Any) -> str:
    if not isinstance(size_bytes, int | float):
        return "unknown"
    return f"{size_bytes / _MB:.1f} MB"


def number(value: Any, unit: str = "", *, digits: int = 2) -> str:
    """A figure with its unit; a value that is not a number is the server's text, shown
    as data (INFO keeps `98.81%` or `inf` as a string)."""
    if value is None:
        return "unknown"
    if isinstance(value, bool):
        return f"{str(value).lower()} {unit}".rstrip()
    if not isinstance(value, int | float):
        return f"{data(value)} {unit}".rstrip()
    if isinstance(value, float):
        value = round(value, digits)
    return f"{value} {unit}".rstrip()


def figure(value: Any) -> float | None:
    """`value` when it is a number to compute with; None (unknown) for anything else."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value


def cap(text: str, max_chars: int = MAX_CHARS) -> str:
    """`text` cut at `max_chars`, saying how much was cut."""
    if len(text) <= max_chars:
        return text
    cut = text[:max_chars].rsplit("\n", 1)[0] if "\n" in text[:max_chars] else text[:max_chars]
    left = len(text) - len(cut)
    return f"{cut}\n[truncated: {left} more characters not shown]"


def listing(
    title: str,
    items: Sequence[Any],
    render: Callable[[Any], str],
    *,
    limit: int = MAX_ENTRIES,
    max_chars: int = LIST_CHARS,
    empty: str = "none",
) -> str:
    """A title and one line per item, bounded by `limit` entries and `max_chars`."""
    if not items:
        return f"{title}: {empty}"
    lines = [f"{title} ({len(items)}):"]
    used = len(lines[0])
    shown = 0
    for item in items[:limit]:
        line = f"- {render(item)}"
        if used + len(line) + 1 > max_chars:
            break
        lines.append(line)
        used += len(line) + 1
        shown += 1
    if shown < len(items):
        lines.append(
            f"[truncated: {len(items) - shown} of {len(items)} entries not shown;"
            f" ask for fewer or narrow the query]"
        )
    return "\n".join(lines)
