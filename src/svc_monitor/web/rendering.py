"""Jinja2 templates for the UI, and the filters every page formats numbers with.

Jinja2 is imported on the first page view, not at start-up: an install that is only
scraped or called over the API never pays its ~3 MB (bench/startup.py).
"""

import datetime as dt
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jinja2 import Environment

TEMPLATES = Path(__file__).parent / "templates"

# Shown for a value the engine did not report (an en dash, as tables print "none").
MISSING = "\u2013"
_BYTE_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


class Templates:
    """One template environment per app (no module-level singletons)."""

    def __init__(self, *, globals_: dict[str, Any]) -> None:
        self._globals = globals_
        self._env: Environment | None = None

    def render(self, name: str, context: dict[str, Any]) -> str:
        return self._environment().get_template(name).render(context)

    def _environment(self) -> "Environment":
        if self._env is None:
            import jinja2

            env = jinja2.Environment(
                loader=jinja2.FileSystemLoader(TEMPLATES),
                autoescape=True,
                undefined=jinja2.StrictUndefined,  # a misspelt name fails the test, not the page
                trim_blocks=True,
                lstrip_blocks=True,
                auto_reload=False,
            )
            env.filters.update(
                bytes=format_bytes,
                number=format_number,
                percent=format_percent,
                duration_us=format_duration_us,
                timestamp=format_timestamp,
            )
            env.globals.update(self._globals)
            self._env = env
        return self._env


def _number(value: object) -> float | None:
    """`value` when it is a finite number; None for anything else. Pages show what a
    server reported, and a hostile one reports `keys=abc` or `inf`: that is a dash on the
    page, not an error."""
    if type(value) is int:
        return float(value) if -(2**63) <= value < 2**63 else None
    if type(value) is float and math.isfinite(value):
        return value
    return None


def format_bytes(value: object) -> str:
    size = _number(value)
    if size is None:
        return MISSING
    for unit in _BYTE_UNITS:
        if abs(size) < 1024 or unit == _BYTE_UNITS[-1]:
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")


def format_number(value: object, digits: int = 0) -> str:
    number = _number(value)
    if number is None:
        return MISSING
    if digits == 0 and type(value) is int:
        return f"{value:,}"  # exact: a float would round a large count
    return f"{number:,.{digits}f}"


def format_percent(value: object, digits: int = 1) -> str:
    number = _number(value)
    if number is None:
        return MISSING
    return f"{number:.{digits}f}%"


def format_duration_us(value: object) -> str:
    """Microseconds as people read them: 850 µs, 12.3 ms, 2.05 s."""
    value = _number(value)
    if value is None:
        return MISSING
    if value < 1000:
        return f"{value:.0f} µs"
    if value < 1_000_000:
        return f"{value / 1000:.1f} ms"
    return f"{value / 1_000_000:.2f} s"


def format_timestamp(epoch_ms: int | None) -> str:
    """ISO 8601 in UTC; the page's script shows it in the browser's time zone."""
    if epoch_ms is None:
        return ""
    moment = dt.datetime.fromtimestamp(epoch_ms / 1000, tz=dt.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
