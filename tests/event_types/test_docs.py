"""OpenAPI's description of the webhooks tag follows the event table."""

from svc_monitor.app import WEBHOOKS_TAG
from svc_monitor.event_types.table import EVENT_TYPES
from tests.fixtures.app import RunningApp


def test_openapi_lists_each_event_type_with_its_tier_severity_and_summary():
    for e in EVENT_TYPES:
        assert f"| `{e.name}` | {e.tier} | {e.severity.upper()} | {e.summary} |" in WEBHOOKS_TAG


def test_openapi_describes_each_open_payload():
    for entry in EVENT_TYPES:
        if entry.payload is not None:
            assert f"`{entry.name}` ({entry.tier}): {entry.payload}" in WEBHOOKS_TAG
    # payloads docs/features/webhooks.md#payloads does not list: the spike events, and the
    # types named by us
    for name in ("latency.spike", "connection.spike", "cluster.bus.corruption", "cve.detected"):
        assert f"`{name}`" in WEBHOOKS_TAG


async def test_the_served_openapi_document_carries_it(api: RunningApp):
    spec = (await api.client.get("/api/openapi.json")).json()
    [webhooks] = [t for t in spec["tags"] if t["name"] == "webhooks"]
    assert webhooks["description"] == WEBHOOKS_TAG
