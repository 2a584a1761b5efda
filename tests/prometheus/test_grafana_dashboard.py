"""The Grafana dashboard shipped in deploy/grafana/: importable, built only from our families.

Grafana's import dialog asks for the Prometheus datasource (`__inputs`), and every query
follows the `connection` variable, except the monitor's own families, which have no
`connection` label. Each query is valid PromQL for Prometheus 2.42's promtool.
"""

import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from svc_monitor.prometheus.catalogue import FAMILIES, exposed_names, sample_names

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
DASHBOARD = DEPLOY / "grafana" / "svc-monitor.json"
RULES = DEPLOY / "prometheus" / "svc-monitor-alerts.yml"
PROMTOOL = shutil.which("promtool")
DATASOURCE = {"type": "prometheus", "uid": "${DS_PROMETHEUS}"}
CONNECTION_FILTER = re.compile(r'connection\s*=~\s*"\$(connection|\{connection\})"')

# What is left of a query once ranges ([5m]) and label lists (by (...)) are gone.
TOKENS = re.compile(
    r"(?P<matchers>\{[^}]*\})|(?P<number>\d+(\.\d+)?)|(?P<name>[A-Za-z_:][\w:]*)|(?P<other>\S)"
)
RANGES = re.compile(r"\[[^\]]*\]")
LABEL_LISTS = re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
KEYWORDS = {"and", "or", "unless", "bool", "offset"}
Json = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Selector:
    name: str
    matchers: str


def selectors(expr: str) -> list[Selector]:
    """The metric names a PromQL query reads, each with its `{...}` (empty if none)."""
    tokens = list(TOKENS.finditer(LABEL_LISTS.sub(" ", RANGES.sub(" ", expr))))
    found = []
    for i, token in enumerate(tokens):
        name = token["name"]
        following = tokens[i + 1] if i + 1 < len(tokens) else None
        if not name or name in KEYWORDS or (following and following["other"] == "("):
            continue  # not a name, or a function or an aggregation
        matchers = following["matchers"] if following and following["matchers"] else ""
        found.append(Selector(name, matchers))
    return found


def load() -> Json:
    dashboard: Json = json.loads(DASHBOARD.read_text())
    return dashboard


def panels(dashboard: Json) -> Iterator[Json]:
    """Every panel, rows and those inside collapsed rows included."""
    for panel in dashboard["panels"]:
        yield panel
        yield from panel.get("panels", [])


def queries(dashboard: Json) -> list[tuple[str, str]]:
    return [
        (panel["title"], target["expr"])
        for panel in panels(dashboard)
        for target in panel.get("targets", [])
    ]


def per_connection_names() -> set[str]:
    return {name for f in FAMILIES if f.per_connection for name in sample_names(f)}


def overlapping(group: list[Json]) -> list[tuple[str, str]]:
    def cells(panel: Json) -> set[tuple[int, int]]:
        g = panel["gridPos"]
        return {
            (x, y) for x in range(g["x"], g["x"] + g["w"]) for y in range(g["y"], g["y"] + g["h"])
        }

    return [
        (a["title"], b["title"])
        for i, a in enumerate(group)
        for b in group[i + 1 :]
        if cells(a) & cells(b)
    ]


class TestImport:
    def test_the_import_dialog_asks_for_a_prometheus_datasource(self):
        dashboard = load()
        assert dashboard["__inputs"] == [
            {
                "name": "DS_PROMETHEUS",
                "label": "Prometheus",
                "description": dashboard["__inputs"][0]["description"],
                "type": "datasource",
                "pluginId": "prometheus",
                "pluginName": "Prometheus",
            }
        ]
        required = {(r["type"], r["id"]) for r in dashboard["__requires"]}
        assert ("datasource", "prometheus") in required

    def test_it_has_what_grafana_needs_to_import_it(self):
        dashboard = load()
        assert isinstance(dashboard["schemaVersion"], int)
        assert 0 < len(dashboard["uid"]) <= 40  # Grafana's limit
        assert dashboard["title"]
        assert dashboard["id"] is None  # the importing Grafana assigns its own
        panel_ids = [panel["id"] for panel in panels(dashboard)]
        assert len(panel_ids) == len(set(panel_ids))
        types = {panel["type"] for panel in panels(dashboard)} - {"row"}
        assert types <= {r["id"] for r in dashboard["__requires"] if r["type"] == "panel"}

    def test_every_panel_and_query_reads_the_chosen_datasource(self):
        dashboard = load()
        for panel in panels(dashboard):
            if panel["type"] == "row":
                continue
            assert panel["datasource"] == DATASOURCE, panel["title"]
            assert panel["targets"], panel["title"]
            for target in panel["targets"]:
                assert target["datasource"] == DATASOURCE, panel["title"]

    def test_panels_fit_the_grid_without_overlapping(self):
        dashboard = load()
        for panel in panels(dashboard):
            g = panel["gridPos"]
            assert min(g["w"], g["h"]) > 0, panel["title"]
            assert 0 <= g["x"] < g["x"] + g["w"] <= 24, panel["title"]
            assert g["y"] >= 0, panel["title"]
        # panels of a collapsed row are placed as if it were open
        assert overlapping(dashboard["panels"]) == []
        for row in dashboard["panels"]:
            assert overlapping(row.get("panels", [])) == [], row["title"]


class TestConnectionVariable:
    def test_it_lists_the_connections_from_one_of_our_families(self):
        variables = {v["name"]: v for v in load()["templating"]["list"]}
        connection = variables["connection"]
        assert connection["type"] == "query"
        assert connection["datasource"] == DATASOURCE
        query = connection["query"]["query"]
        listed = re.fullmatch(r"label_values\((\w+),\s*connection\)", query)
        assert listed, query
        assert listed[1] in per_connection_names()
        assert connection["definition"] == query
        # "All" as a regex, so connections added after the page loaded show too
        assert (connection["multi"], connection["includeAll"]) == (True, True)
        assert connection["allValue"] == ".+"


class TestQueries:
    def test_they_read_only_families_the_endpoint_exposes(self):
        names = {s.name for _, expr in queries(load()) for s in selectors(expr)}
        assert names
        assert names - exposed_names() == set()

    def test_instance_families_follow_the_connection_variable(self):
        ours = per_connection_names()
        for title, expr in queries(load()):
            for selector in selectors(expr):
                if selector.name in ours:
                    assert CONNECTION_FILTER.search(selector.matchers), (title, expr)
                else:  # the monitor's own: no `connection` label, so no filter on it
                    assert "connection" not in selector.matchers, (title, expr)

    def test_what_the_alerts_watch_is_on_the_dashboard(self):
        alerted = set(re.findall(r"\bsvc_\w+", RULES.read_text())) & exposed_names()
        shown = {s.name for _, expr in queries(load()) for s in selectors(expr)}
        assert alerted - shown == set()

    @pytest.mark.skipif(
        PROMTOOL is None,
        reason="promtool is not installed (CI installs Debian's `prometheus` package)",
    )
    def test_every_query_is_valid_promql(self, tmp_path: Path):
        rules = ["groups:", "  - name: dashboard", "    rules:"]
        for i, (_, expr) in enumerate(queries(load())):
            concrete = expr.replace("$__rate_interval", "5m").replace("$connection", ".+")
            rules += [
                f"      - record: dashboard_query_{i}",
                f"        expr: {json.dumps(concrete)}",
            ]
        path = tmp_path / "dashboard-queries.yml"
        path.write_text("\n".join(rules) + "\n")
        assert PROMTOOL is not None
        checked = subprocess.run(
            [PROMTOOL, "check", "rules", str(path)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert checked.returncode == 0, checked.stdout + checked.stderr


class TestContent:
    def test_rows_cover_each_area_in_order(self):
        rows = [panel["title"] for panel in load()["panels"] if panel["type"] == "row"]
        assert rows == [
            "Overview",
            "Memory",
            "Throughput",
            "Keys",
            "Replication",
            "Persistence",
            "Cluster",
            "Slow log and commands",
            "Security",
            "The monitor itself",
        ]

    def test_every_row_has_panels(self):
        top = load()["panels"]
        for i, row in enumerate(top):
            if row["type"] != "row":
                continue
            first = row["panels"][:1] if row["collapsed"] else top[i + 1 : i + 2]
            assert [p["type"] != "row" for p in first] == [True], row["title"]


class TestSelectors:
    """The small PromQL reader the checks above rely on."""

    def test_it_finds_names_and_their_matchers_but_not_functions_or_labels(self):
        expr = (
            'topk(10, sum by (connection, command) (rate(svc_a_total{connection=~"$connection"}'
            '[$__rate_interval]))) / on (connection) (svc_b > 0) * 1024 and time() - svc_c{x="{"}'
        )
        assert selectors(expr) == [
            Selector("svc_a_total", '{connection=~"$connection"}'),
            Selector("svc_b", ""),
            Selector("svc_c", '{x="{"}'),
        ]
