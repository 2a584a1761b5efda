"""The README's table of event types and OpenAPI's payload notes follow the event table."""

from pathlib import Path

from svc_monitor.app import WEBHOOKS_TAG
from svc_monitor.event_types.docs import README_BEGIN, README_END, readme_table
from svc_monitor.event_types.table import EVENT_TYPES

README = Path(__file__).resolve().parents[2] / "README.md"


def readme_block() -> str:
    text = README.read_text()
    assert text.count(README_BEGIN) == 1
    return text.split(README_BEGIN + "\n", 1)[1].split("\n" + README_END, 1)[0]


def test_the_readme_table_is_the_event_table():
    assert readme_block() == readme_table(), (
        "the README's event table differs from src/svc_monitor/event_types/: run "
        "`PYTHONPATH=src python scripts/event_types_readme.py`"
    )


def test_each_readme_row_says_name_tier_severity_and_summary():
    rows = readme_block().splitlines()[2:]
    cells = [[c.strip() for c in row.strip("|").split(" | ")] for row in rows]
    assert cells == [[f"`{e.name}`", e.tier, e.severity.upper(), e.summary] for e in EVENT_TYPES]


def test_openapi_describes_each_open_payload():
    for entry in EVENT_TYPES:
        if entry.payload is not None:
            assert f"`{entry.name}` ({entry.tier}): {entry.payload}" in WEBHOOKS_TAG
    # the spec leaves these open; ours are named by us
    for name in ("latency.spike", "connection.spike", "cluster.bus.corruption", "cve.detected"):
        assert f"`{name}`" in WEBHOOKS_TAG
