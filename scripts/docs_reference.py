"""The docs site's reference pages, written from the code so they cannot drift from it.

Each function returns one page's Markdown: the configuration from `Settings`, the
Prometheus families from the catalogue, the webhook events from the event table, the MCP
tools from the MCP server itself.

The pages are committed under docs/reference/, so that a link to one reads the same on the
repository's host as on the built site: `python -m scripts.docs_reference` rewrites them
after a change to the code, and tests/docs/test_reference_pages.py fails while a committed
page is not what this module writes, and checks the pages against the same sources.
"""

import asyncio
import enum
import inspect
import re
import types
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from annotated_types import Ge, Le, MaxLen, MinLen
from mcp.server.mcpserver import Context, MCPServer
from mcp_types import Prompt, ResourceTemplate, Tool
from pydantic import SecretStr
from pydantic.fields import FieldInfo

from svc_monitor.config import Settings
from svc_monitor.event_types.table import EVENT_TYPES
from svc_monitor.mcp.caller_protocol import ApiCaller
from svc_monitor.mcp.output import MAX_CHARS
from svc_monitor.mcp.server import build_server
from svc_monitor.otlp.ingest.collector_config import TOKEN_VARIABLE, Engine, collector_config
from svc_monitor.prometheus.catalogue import FAMILIES, Family, sample_names

DOCS = Path(__file__).resolve().parent.parent / "docs"
# Pages under docs/ that this module writes.
SETTINGS_PAGE = "reference/configuration.md"
PROMETHEUS_PAGE = "reference/prometheus-metrics.md"
EVENTS_PAGE = "reference/webhook-events.md"
COLLECTOR_PAGE = "reference/collector-config.md"
MCP_PAGE = "reference/mcp-tools.md"

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


def _no_caller(ctx: Context, tool: str) -> ApiCaller:
    raise RuntimeError(f"the docs list {tool} and never call it")


def mcp_server() -> MCPServer:
    """The server `svc-monitor mcp` and `/mcp` serve; listing it reaches no service."""
    return build_server(_no_caller, lambda ctx: False)


async def _listed(server: MCPServer) -> tuple[list[Tool], list[Prompt], list[ResourceTemplate]]:
    return (
        await server.list_tools(),
        await server.list_prompts(),
        await server.list_resource_templates(),
    )


def mcp_listing(
    server: MCPServer | None = None,
) -> tuple[list[Tool], list[Prompt], list[ResourceTemplate]]:
    """What an assistant's `tools/list`, `prompts/list` and `resources/templates/list` get."""
    return asyncio.run(_listed(server or mcp_server()))


def is_admin_tool(tool: Tool) -> bool:
    """An admin's tool, as the server announces it: not read-only."""
    return tool.annotations is not None and tool.annotations.read_only_hint is False


def _schema_type(schema: dict[str, Any]) -> str:
    """A JSON Schema property as a reader says it: `integer (>= 1, <= 100)`, `one of a, b`."""
    if "anyOf" in schema:
        kept = [option for option in schema["anyOf"] if option.get("type") != "null"]
        return " or ".join(_schema_type(option) for option in kept)
    if "enum" in schema:
        return "one of " + ", ".join(f"`{value}`" for value in schema["enum"])
    if schema.get("format") == "password":
        return "secret"
    names = {"integer": "integer", "number": "number", "boolean": "boolean", "string": "text"}
    words = names.get(str(schema.get("type")), str(schema.get("type", "any")))
    bounds = []
    if "minimum" in schema:
        bounds.append(f">= {schema['minimum']}")
    if "maximum" in schema:
        bounds.append(f"<= {schema['maximum']}")
    if "minLength" in schema:
        bounds.append(_characters("at least", schema["minLength"]))
    if "maxLength" in schema:
        bounds.append(_characters("at most", schema["maxLength"]))
    if "pattern" in schema:
        bounds.append(f"matching `{schema['pattern']}`")
    return f"{words} ({', '.join(bounds)})" if bounds else words


def _characters(bound: str, count: int) -> str:
    return f"{bound} {count} character{'' if count == 1 else 's'}"


def _schema_default(name: str, schema: dict[str, Any], required: list[str]) -> str:
    if name in required:
        return "required"
    default = schema.get("default")
    if default is None:
        return "none"
    if isinstance(default, bool):
        return f"`{str(default).lower()}`"
    return f"`{default}`"


def _tool_section(tool: Tool) -> list[str]:
    access = (
        "**Admin tool**: needs an admin's token."
        if is_admin_tool(tool)
        else "Read tool: a member's token, or none where user control is off."
    )
    lines = ["", f"### `{tool.name}`", "", access, "", " ".join((tool.description or "").split())]
    properties: dict[str, Any] = tool.input_schema.get("properties", {})
    required: list[str] = tool.input_schema.get("required", [])
    lines += ["", "| parameter | type | default | description |", "|---|---|---|---|"]
    for name, schema in properties.items():
        lines.append(
            f"| `{name}` | {_cell(_schema_type(schema))} "
            f"| {_cell(_schema_default(name, schema, required))} "
            f"| {_cell(schema.get('description', ''))} |"
        )
    return lines


def mcp_tools_page() -> str:
    """Every tool, prompt and resource template the MCP server lists, with input schemas."""
    server = mcp_server()
    tools, prompts, templates = mcp_listing(server)
    lines = [
        "# MCP tools",
        "",
        "Generated by asking svc-monitor's MCP server for its lists, as an assistant does when",
        "it connects: the same server answers `svc-monitor mcp` (stdio) and `/mcp` (HTTP).",
        "Every tool runs a REST route with the caller's token, so the route's role, licence",
        "tier and activity log entry apply; a **read** tool needs a member's token (or none",
        "where user control is off), an **admin** tool an admin's. Every answer is text of",
        f"at most {MAX_CHARS:,} characters and says when it was cut. Setting up an assistant:",
        "[Connect an AI assistant (MCP)](../guides/mcp.md).",
        "",
        "## What the server tells the assistant",
        "",
        "```text",
        (server.instructions or "").strip(),
        "```",
        "",
        "## Tools",
        "",
        f"{len(tools)} tools, in the order the server lists them.",
        "",
        "| tool | access | description |",
        "|---|---|---|",
    ]
    for tool in tools:
        access = "admin" if is_admin_tool(tool) else "read"
        lines.append(f"| `{tool.name}` | {access} | {_cell(tool.description or '')} |")
    for tool in tools:
        lines += _tool_section(tool)
    lines += [
        "",
        "## Prompts",
        "",
        "Investigations an assistant offers as commands: each names the tools to call, in",
        "order, and what to answer with.",
        "",
        "| prompt | arguments | description |",
        "|---|---|---|",
    ]
    for prompt in prompts:
        arguments = ", ".join(
            f"`{a.name}`" + ("" if a.required else " (optional)") for a in prompt.arguments or []
        )
        lines.append(
            f"| `{prompt.name}` | {arguments or '-'} | {_cell(prompt.description or '')} |"
        )
    lines += [
        "",
        "## Resources",
        "",
        "| URI template | name | MIME type | description |",
        "|---|---|---|---|",
    ]
    for template in templates:
        lines.append(
            f"| `{template.uri_template}` | `{template.name}` | {template.mime_type or '-'} "
            f"| {_cell(template.description or '')} |"
        )
    return "\n".join(lines) + "\n"


PAGES = {
    SETTINGS_PAGE: settings_page,
    PROMETHEUS_PAGE: prometheus_page,
    EVENTS_PAGE: events_page,
    COLLECTOR_PAGE: collector_page,
    MCP_PAGE: mcp_tools_page,
}

# First line of each written page: an HTML comment, unseen on the site and on the host.
NOTICE = (
    "<!-- Written from the code by scripts/docs_reference.py: do not edit. After a change "
    "to the code, `python -m scripts.docs_reference` writes it again. -->\n"
)


def page_text(page: str) -> str:
    """The whole file of one page, as committed."""
    return NOTICE + PAGES[page]()


def write_pages(docs: Path = DOCS) -> list[str]:
    """Write each page whose file differs from what the code gives; the pages written."""
    written = []
    for page in PAGES:
        path, text = docs / page, page_text(page)
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            written.append(page)
    return written


if __name__ == "__main__":
    for page in write_pages():
        print(f"wrote docs/{page}")  # noqa: T201
