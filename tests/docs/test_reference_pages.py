"""The docs site against the code: the generated reference pages list exactly what the code
has, the hand-written pages name only settings and metric families that exist, and the
site builds with `mkdocs build --strict` (broken links and anchors fail it)."""

import re
from pathlib import Path

import pytest
from pydantic import SecretStr
from scripts.docs_reference import (
    COLLECTOR_PAGE,
    MCP_PAGE,
    PAGES,
    collector_page,
    events_page,
    example_collector_config,
    is_admin_tool,
    mcp_listing,
    mcp_tools_page,
    page_text,
    prometheus_page,
    settings_page,
    write_pages,
)

from svc_monitor.agent.settings import AgentSettings
from svc_monitor.config import McpClientSettings, Settings
from svc_monitor.event_types.table import BY_NAME, EVENT_TYPES
from svc_monitor.mcp.output import MAX_CHARS
from svc_monitor.mcp.tools.catalog import TOOLS
from svc_monitor.prometheus.catalogue import FAMILIES, exposed_names, sample_names
from svc_monitor.web.routes.tokens import TOKEN_PLACEHOLDER, mcp_snippets
from svc_monitor.webhooks.targets import parse_webhook_url

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"

# Upper-case names the docs may show that are not svc-monitor settings: the OpenTelemetry
# SDK's own variables a sender sets, the Collector's environment, shell variables of the
# examples, and the entitlement server's variables (an app of its own).
EXTERNAL_NAMES = frozenset(
    {
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        "SVC_INGEST_TOKEN",
        "REDIS_PASSWORD",
        "TOKEN",
        "ENTITLEMENT_ADMIN_TOKEN",
        "ENTITLEMENT_PORT",
        "ENTITLEMENT_BIND_HOST",
        "ENTITLEMENT_STORAGE_TYPE",
        "ENTITLEMENT_SQLITE_FILEPATH",
        "ENTITLEMENT_STORAGE_URL",
        "ENTITLEMENT_LATEST_VERSION",
        "ENTITLEMENT_RELEASE_URL",
        "EMBEDDED_PUBLIC_KEYS",
        # the compose file's own (deploy/compose.yaml), read by Grafana's container
        "GRAFANA_ADMIN_PASSWORD",
        # the `svc-monitor mcp` client's environment, set in an assistant's configuration
        "SVC_URL",
        "SVC_TOKEN",
        # not variables at all: a command of the CLI's list, a table in the code
        "SORT_RO",
        "PAGE_MODULES",
    }
)
# A name in capitals with underscores, alone in backticks (or as `NAME=value`).
SETTING_LIKE = re.compile(r"`([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)(?:=[^`]*)?`")
# A variable a shell example sets: `PORT=3002 ...`, `export STORAGE_TYPE=postgres`.
ASSIGNED = re.compile(r"(?:^|[\s;(])([A-Z][A-Z0-9_]*)=", re.M)
FENCE = re.compile(r"^```(?:sh|bash)\n(.*?)^```", re.M | re.S)
# Not metric families: cookies and the personal token prefix.
NOT_FAMILIES = frozenset({"svc_session", "svc_connection", "svc_broker_state", "svc_pat_"})
FAMILY_LIKE = re.compile(r"`(svc_[a-z0-9_]+)")


def _hand_written_pages() -> list[Path]:
    return sorted(DOCS.rglob("*.md"))


def _table_names(page: str) -> list[str]:
    """The first cell of each table row, without its backticks."""
    return re.findall(r"^\| `([^`]+)`", page, flags=re.M)


class TestSettingsPage:
    def test_every_setting_has_a_row_with_its_description(self):
        page = settings_page()
        rows = {name: line for line in page.splitlines() for name in _table_names(line)}
        for name, info in Settings.model_fields.items():
            assert name in rows, f"{name} is missing from the configuration page"
            assert info.description, f"{name} has no description in config.py"
            assert " ".join(info.description.split()) in rows[name]

    def test_the_page_names_no_setting_that_does_not_exist(self):
        listed = _table_names(settings_page())
        assert sorted(listed) == sorted(Settings.model_fields)

    def test_secrets_are_marked_and_only_they(self):
        for line in settings_page().splitlines():
            for name in _table_names(line):
                secret = "SecretStr" in repr(Settings.model_fields[name].annotation)
                assert ("**secret**" in line) is secret, line
        assert any(
            Settings.model_fields[n].annotation == SecretStr | None for n in Settings.model_fields
        )

    def test_defaults_are_shown_as_the_code_has_them(self):
        rows = {name: line for line in settings_page().splitlines() for name in _table_names(line)}
        assert "`3001`" in rows["PORT"]
        assert "`memory`" in rows["STORAGE_TYPE"]
        assert "`false`" in rows["WORKSPACE_DISABLED"]
        assert "unset" in rows["ENCRYPTION_KEY"]


class TestPrometheusPage:
    def test_every_family_is_listed_under_its_sample_names(self):
        page = prometheus_page()
        for family in FAMILIES:
            for name in sample_names(family):
                assert f"`{name}`" in page, f"{name} is missing from the metrics page"

    def test_the_page_names_no_family_the_endpoint_cannot_serve(self):
        named = set(FAMILY_LIKE.findall(prometheus_page()))
        assert named, "the page lists no family"
        assert named <= exposed_names()

    def test_full_profile_families_are_marked(self):
        page = prometheus_page()
        for family in FAMILIES:
            row = next(line for line in page.splitlines() if f"`{sample_names(family)[0]}`" in line)
            assert ("| full |" in row) is family.full, row


class TestEventsPage:
    def test_every_event_type_is_listed_with_its_tier(self):
        rows = {name: line for line in events_page().splitlines() for name in _table_names(line)}
        for event in EVENT_TYPES:
            assert event.name in rows, f"{event.name} is missing from the events page"
            assert f"| {event.tier} |" in rows[event.name]

    def test_the_page_names_no_event_that_does_not_exist(self):
        listed = _table_names(events_page())
        assert listed
        assert set(listed) <= set(BY_NAME)


class TestCollectorPage:
    def test_it_shows_the_configuration_the_service_writes(self):
        page = collector_page()
        for engine in ("valkey", "redis"):
            assert example_collector_config(engine).rstrip() in page

    def test_it_is_a_written_page(self):
        assert COLLECTOR_PAGE in PAGES


class TestCommittedPages:
    """The written pages are committed, so that links to them work on the repository's host;
    each must be what the code writes now."""

    @pytest.mark.parametrize("page", sorted(PAGES))
    def test_the_committed_page_is_what_the_code_writes(self, page: str):
        committed = DOCS / page
        assert committed.is_file(), (
            f"docs/{page} is missing: run `python -m scripts.docs_reference`"
        )
        assert committed.read_text(encoding="utf-8") == page_text(page), (
            f"docs/{page} is not what the code writes: run `python -m scripts.docs_reference`"
        )

    def test_writing_them_again_changes_nothing(self, tmp_path: Path):
        assert sorted(write_pages(tmp_path)) == sorted(PAGES)
        assert write_pages(tmp_path) == []


def _section(page: str, title: str) -> str:
    """The text under `## title`, up to the next `## ` heading."""
    start = page.index(f"\n## {title}\n")
    end = page.find("\n## ", start + 1)
    return page[start : end if end != -1 else len(page)]


def _tool_rows(page: str) -> dict[str, str]:
    """The summary table of the tools: its rows by tool name."""
    summary = _section(page, "Tools").split("\n### ", 1)[0]
    return {name: line for line in summary.splitlines() for name in _table_names(line)}


class TestMcpToolsPage:
    def test_every_tool_the_server_lists_has_a_row_and_a_section(self):
        page = mcp_tools_page()
        tools, _, _ = mcp_listing()
        section = _section(page, "Tools")
        rows = _tool_rows(page)
        headings = re.findall(r"^### `([^`]+)`$", section, flags=re.M)
        assert [tool.name for tool in tools] == headings
        assert set(rows) == set(headings)
        # What the server lists is the catalogue, nothing more and nothing less.
        assert headings == [spec.name for spec in TOOLS]

    def test_admin_tools_are_marked_as_the_catalogue_has_them(self):
        rows = _tool_rows(mcp_tools_page())
        for spec in TOOLS:
            assert f"| {'admin' if spec.admin else 'read'} |" in rows[spec.name], spec.name
        tools, _, _ = mcp_listing()
        assert {t.name for t in tools if is_admin_tool(t)} == {s.name for s in TOOLS if s.admin}

    def test_each_parameter_is_listed_with_its_default_and_description(self):
        page = mcp_tools_page()
        for spec in TOOLS:
            start = page.index(f"### `{spec.name}`")
            end = page.find("\n### ", start + 1)
            block = page[start : end if end != -1 else page.index("\n## Prompts")]
            rows = {n: line for line in block.splitlines() for n in _table_names(line)}
            assert sorted(rows) == sorted(spec.params.model_fields), spec.name
            for name, field in spec.params.model_fields.items():
                if field.is_required():
                    assert "| required |" in rows[name], (spec.name, name)
                elif isinstance(field.default, int) and not isinstance(field.default, bool):
                    assert f"| `{field.default}` |" in rows[name], (spec.name, name)
                if field.description:
                    assert " ".join(field.description.split()) in rows[name], (spec.name, name)

    def test_bounds_and_choices_come_from_the_input_schema(self):
        page = mcp_tools_page()
        diagnose = page[page.index("### `diagnose`") : page.index("### `compare`")]
        assert "| `limit` | integer (>= 1, <= 100) | `20` |" in diagnose
        assert "one of `slow`, `large-request`, `large-reply`" in page
        assert "| `password` | secret or" not in page  # a secret is never "or null"
        assert "| `password` | secret |" in page

    def test_the_prompts_and_the_resource_are_listed(self):
        page = mcp_tools_page()
        _, prompts, templates = mcp_listing()
        listed = _table_names(_section(page, "Prompts"))
        assert listed == [prompt.name for prompt in prompts]
        assert set(listed) == {"why_is_it_slow", "will_it_run_out_of_memory"}
        resources = _table_names(_section(page, "Resources"))
        assert resources == [template.uri_template for template in templates]
        assert resources == ["svc://connections/{connection}/state"]

    def test_it_is_a_generated_page(self):
        assert MCP_PAGE in PAGES
        assert f"at most {MAX_CHARS:,} characters" in mcp_tools_page()


class TestMcpGuide:
    GUIDE = DOCS / "guides" / "mcp.md"

    def test_it_shows_the_snippets_the_settings_page_gives(self):
        text = self.GUIDE.read_text(encoding="utf-8")
        blocks = re.findall(r"^```json\n(.*?)^```", text, flags=re.M | re.S)
        snippets = mcp_snippets("https://monitor.example.com", None)
        assert TOKEN_PLACEHOLDER in snippets["stdio"]
        assert [b.rstrip() for b in blocks] == [snippets["stdio"], snippets["http"]]

    def test_the_output_limit_and_tool_names_it_quotes_are_real(self):
        text = self.GUIDE.read_text(encoding="utf-8")
        assert f"at most {MAX_CHARS:,}" in " ".join(text.split())
        names = {spec.name for spec in TOOLS}
        quoted = set(re.findall(r"`([a-z]+(?:_[a-z]+)+|diagnose|compare|forecast)`", text))
        prompts = {"why_is_it_slow", "will_it_run_out_of_memory"}
        assert quoted - names - prompts == set()
        admin = {spec.name for spec in TOOLS if spec.admin}
        assert all(f"`{name}`" in text for name in admin), "the guide lists every admin tool"


class TestHandWrittenPages:
    @pytest.mark.parametrize("page", _hand_written_pages(), ids=lambda p: str(p.relative_to(DOCS)))
    def test_settings_named_exist(self, page: Path):
        text = page.read_text(encoding="utf-8")
        named = set(SETTING_LIKE.findall(text))
        named |= {name for block in FENCE.findall(text) for name in ASSIGNED.findall(block)}
        # `svc-monitor mcp` reads SVC_URL and SVC_TOKEN, the service's settings not at all.
        # `svc-monitor agent` reads its own (agent/settings.py).
        known = (
            set(Settings.model_fields)
            | set(McpClientSettings.model_fields)
            | set(AgentSettings.model_fields)
        )
        unknown = named - known - EXTERNAL_NAMES
        assert not unknown, f"{page.name} names settings that do not exist: {sorted(unknown)}"

    @pytest.mark.parametrize("page", _hand_written_pages(), ids=lambda p: str(p.relative_to(DOCS)))
    def test_metric_families_named_exist(self, page: Path):
        families = {f.name for f in FAMILIES} | exposed_names()
        named = set(FAMILY_LIKE.findall(page.read_text(encoding="utf-8")))
        unknown = {
            name
            for name in named - families - NOT_FAMILIES
            # `svc_process_*`: a wildcard over families, written as a prefix
            if not any(f.startswith(name) for f in families)
        }
        assert not unknown, f"{page.name} names families that do not exist: {sorted(unknown)}"

    def test_http_webhooks_are_said_to_need_the_mode_the_code_names(self):
        """Every clause that says `http://` webhook URLs are accepted names only the NODE_ENV
        value the URL check itself names when it refuses `http://`."""
        with pytest.raises(ValueError, match=r"NODE_ENV=\w+") as refused:
            parse_webhook_url("http://example.com/hook", allow_http=False)
        allowed = set(re.findall(r"NODE_ENV=(\w+)", str(refused.value)))
        claims: set[str] = set()
        for page in _hand_written_pages():
            text = " ".join(page.read_text(encoding="utf-8").split())
            for clause in re.split(r"[.;]\s", text):
                if "`http://`" in clause and "accept" in clause:
                    claims |= set(re.findall(r"`NODE_ENV=(\w+)`", clause))
        assert claims, "no page says when http:// webhook URLs are accepted"
        assert claims <= allowed, f"the docs accept http:// with {sorted(claims - allowed)}"


@pytest.mark.slow
def test_the_site_builds_strict(built_site: Path):
    """What `make docs` runs: a broken link, a missing anchor or a page that cannot be
    rendered fails the build."""
    for page in PAGES:
        built = built_site / page.replace(".md", ".html")
        assert built.exists(), built
    configuration = (built_site / "reference" / "configuration.html").read_text(encoding="utf-8")
    assert "ENCRYPTION_KEY" in configuration
