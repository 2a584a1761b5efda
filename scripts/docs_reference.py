"""The docs site's reference pages, written from the code so they cannot drift from it.

Each function returns one page's Markdown: the configuration from `Settings`, the
Prometheus families from the catalogue, the webhook events from the event table.
`scripts/gen_docs_pages.py` hands them to mkdocs-gen-files at build time, and
tests/docs/test_reference_pages.py checks them against the same sources.
"""

import enum
import inspect
import re
import types
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from annotated_types import Ge, Le, MaxLen, MinLen
from pydantic import SecretStr
from pydantic.fields import FieldInfo

from svc_monitor.config import Settings
from svc_monitor.event_types.table import EVENT_TYPES
from svc_monitor.otlp.ingest.collector_config import TOKEN_VARIABLE, Engine, collector_config
from svc_monitor.prometheus.catalogue import FAMILIES, Family, sample_names

# Pages under docs/ that the generator writes (none exists as a file in the repository).
SETTINGS_PAGE = "reference/configuration.md"
PROMETHEUS_PAGE = "reference/prometheus-metrics.md"
EVENTS_PAGE = "reference/webhook-events.md"
COLLECTOR_PAGE = "reference/collector-config.md"

# The example instance and service of the generated Collector configuration.
EXAMPLE_HOST = "valkey.internal"
EXAMPLE_PORT = 6379
EXAMPLE_SERVICE_URL = "https://monitor.example.com"

_SECTION = re.compile(r"^\s*# --- (?P<title>.+?) ---\s*$")
_FIELD = re.compile(r"^\s*(?P<name>[A-Z][A-Z0-9_]*)\s*:")


def _cell(text: str) -> str:
    """Text on one line that cannot break a Markdown table row."""
    return " ".join(text.split()).replace("|", "\\|")


def _sections() -> dict[str, str]:
    """Each setting's section title, from the `# --- title ---` lines of `Settings`."""
    found: dict[str, str] = {}
    title = "general"
    for line in inspect.getsource(Settings).splitlines():
        section = _SECTION.match(line)
        if section:
            # "pollers and detectors (seed the runtime settings)": the reader needs the name.
            title = re.sub(r"\s*\(.*\)$", "", section.group("title"))
            continue
        field = _FIELD.match(line)
        if field and field.group("name") in Settings.model_fields:
            found.setdefault(field.group("name"), title)
    return found


def _is_secret(annotation: Any) -> bool:
    if annotation is SecretStr:
        return True
    return any(_is_secret(arg) for arg in get_args(annotation))


def _type_words(annotation: Any) -> str:
    """The annotation as a reader says it: `integer (>= 100)`, `one of a, b`, `secret`."""
    origin = get_origin(annotation)
    if origin is Annotated:
        base, *meta = get_args(annotation)
        return _with_bounds(_type_words(base), meta)
    if origin in (Union, types.UnionType):
        kept = [arg for arg in get_args(annotation) if arg is not type(None)]
        return " or ".join(_type_words(arg) for arg in kept)
    if origin is Literal:
        return "one of " + ", ".join(f"`{value}`" for value in get_args(annotation))
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return "one of " + ", ".join(f"`{member.value}`" for member in annotation)
    names = {bool: "boolean", int: "integer", str: "text", Path: "path", SecretStr: "secret"}
    return names.get(annotation, getattr(annotation, "__name__", str(annotation)))


def _with_bounds(words: str, metadata: list[Any]) -> str:
    bounds = []
    for item in metadata:
        if isinstance(item, FieldInfo):
            bounds += _bound_words(item.metadata)
        else:
            bounds += _bound_words([item])
    return f"{words} ({', '.join(bounds)})" if bounds else words


def _bound_words(metadata: list[Any]) -> list[str]:
    words = []
    for item in metadata:
        if isinstance(item, Ge):
            words.append(f">= {item.ge}")
        elif isinstance(item, Le):
            words.append(f"<= {item.le}")
        elif isinstance(item, MinLen):
            words.append(f"at least {item.min_length} characters")
        elif isinstance(item, MaxLen):
            words.append(f"at most {item.max_length} characters")
    return words


def _field_type(info: FieldInfo) -> str:
    words = _type_words(info.annotation)
    # Constraints written as `Annotated[int, Field(ge=...)]` land on the field itself.
    return _with_bounds(words, list(info.metadata))


def _default_words(info: FieldInfo) -> str:
    default = info.default
    if default is None:
        return "unset"
    if isinstance(default, enum.Enum):
        default = default.value
    if isinstance(default, bool):
        return f"`{str(default).lower()}`"
    if isinstance(default, Path):
        return f"`{default.as_posix() if default.is_absolute() else './' + default.as_posix()}`"
    if default == "":
        return "empty"
    return f"`{default}`"


def settings_page() -> str:
    """Every environment variable `Settings` reads: name, type, default, description."""
    sections = _sections()
    lines = [
        "# Configuration",
        "",
        "Generated from `Settings` in `src/svc_monitor/config.py`. Every variable is read",
        "once at startup; a bad value stops the service with one line naming it (exit code 2).",
        "Booleans take `true/1/yes/on` and `false/0/no/off`. An empty value means unset.",
        "**Secret** variables are never logged, shown or returned.",
        "",
        "`svc-monitor config` prints every variable with the value a process started here",
        "would run with and where it came from (`environment` or `default`), secrets masked",
        "as `********`; `svc-monitor config --json` prints the same as one JSON object.",
        "",
    ]
    current = None
    for name, info in Settings.model_fields.items():
        section = sections.get(name, "general")
        if section != current:
            current = section
            lines += [
                "",
                f"## {section[0].upper()}{section[1:]}",
                "",
                "| variable | type | default | description |",
                "|---|---|---|---|",
            ]
        secret = " **secret**" if _is_secret(info.annotation) else ""
        lines.append(
            f"| `{name}`{secret} | {_cell(_field_type(info))} | {_cell(_default_words(info))} "
            f"| {_cell(info.description or '')} |"
        )
    return "\n".join(lines) + "\n"


def _labels(family: Family) -> str:
    labels = (("connection",) if family.per_connection else ()) + family.labels
    return ", ".join(f"`{label}`" for label in labels) or "-"


def prometheus_page() -> str:
    """Every family `/api/prometheus/metrics` can serve, from the catalogue."""
    lines = [
        "# Prometheus metrics",
        "",
        "Generated from `src/svc_monitor/prometheus/catalogue.py`. The names are those",
        "a scrape of `GET /api/prometheus/metrics` shows (counters with `_total`). Families",
        "of profile **full** appear only with `METRICS_EXPORT_PROFILE=full`. A field an",
        "engine does not report has no series, never a 0. What the endpoint serves and",
        "how: [Prometheus](../features/prometheus.md).",
        "",
        "| family | type | labels | profile | description |",
        "|---|---|---|---|---|",
    ]
    for family in FAMILIES:
        names = " ".join(f"`{name}`" for name in sample_names(family))
        profile = "full" if family.full else "standard"
        lines.append(
            f"| {names} | {family.kind} | {_labels(family)} | {profile} | {_cell(family.help)} |"
        )
    return "\n".join(lines) + "\n"


def events_page() -> str:
    """Every webhook event type, from the event table, with its payload notes."""
    lines = [
        "# Webhook events",
        "",
        "Generated from the event table (`src/svc_monitor/event_types/`). A webhook may",
        "subscribe to an event of its install's tier or below; the same events leave as",
        "OTLP log records with the severity shown. How deliveries work:",
        "[Webhooks](../features/webhooks.md).",
        "",
        "| event | tier | OTLP severity | threshold field | fires on |",
        "|---|---|---|---|---|",
    ]
    for event in EVENT_TYPES:
        threshold = f"`{event.threshold}`" if event.threshold else "-"
        lines.append(
            f"| `{event.name}` | {event.tier} | {event.severity.upper()} | {threshold} "
            f"| {_cell(event.summary)} |"
        )
    notes = [event for event in EVENT_TYPES if event.payload is not None]
    if notes:
        lines += ["", "## Payloads", ""]
        lines += [f"- `{event.name}`: {event.payload}" for event in notes]
    return "\n".join(lines) + "\n"


def example_collector_config(engine: Engine) -> str:
    """What the push tab shows for the example instance, with a token set."""
    return collector_config(
        host=EXAMPLE_HOST,
        port=EXAMPLE_PORT,
        service_url=EXAMPLE_SERVICE_URL,
        engine=engine,
        valkey_version="9.0.0" if engine == "valkey" else None,
        token=True,
    )


def collector_page() -> str:
    """The Collector configuration the service writes, for a Valkey and a Redis."""
    lines = [
        "# Collector configuration",
        "",
        "Generated by the same code that writes the configuration in the Add connection",
        "dialog's **OTLP push** tab and `GET /api/otlp/collector-config`, for an instance",
        f"at `{EXAMPLE_HOST}:{EXAMPLE_PORT}` and svc-monitor at `{EXAMPLE_SERVICE_URL}`.",
        "Ask your own svc-monitor for yours, with your host, port and version filled in:",
        "",
        "```sh",
        "curl -H 'Authorization: Bearer svc_pat_...' \\",
        f"  '{EXAMPLE_SERVICE_URL}/api/otlp/collector-config?host={EXAMPLE_HOST}"
        f"&port={EXAMPLE_PORT}&engine=valkey&valkeyVersion=9.0.0'",
        "```",
        "",
        f"Set `{TOKEN_VARIABLE}` in the Collector's environment to svc-monitor's",
        "`OTEL_INGEST_TOKEN`. Step by step: [Push from an OpenTelemetry",
        "Collector](../guides/push-from-collector.md).",
    ]
    engines: tuple[tuple[Engine, str], ...] = (("valkey", "Valkey"), ("redis", "Redis"))
    for engine, title in engines:
        lines += [
            "",
            f"## {title}",
            "",
            "```yaml",
            example_collector_config(engine).rstrip(),
            "```",
        ]
    return "\n".join(lines) + "\n"


PAGES = {
    SETTINGS_PAGE: settings_page,
    PROMETHEUS_PAGE: prometheus_page,
    EVENTS_PAGE: events_page,
    COLLECTOR_PAGE: collector_page,
}
