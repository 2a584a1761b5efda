"""The event table as documentation, built when the app starts: OpenAPI's description of
the webhooks tag lists every event type (its tier, default severity and what fires it)
and the payload notes, so the API docs (/api) never drift from the table."""

from svc_monitor.event_types.table import EVENT_TYPES


def event_table() -> str:
    """Every event type, in list order: name, tier, default OTLP severity, summary."""
    rows = [
        "| event | tier | OTLP severity | fires on |",
        "|---|---|---|---|",
        *(f"| `{e.name}` | {e.tier} | {e.severity.upper()} | {e.summary} |" for e in EVENT_TYPES),
    ]
    return "\n".join(rows)


def payload_notes() -> str:
    """One paragraph per event type whose fields docs/features/webhooks.md#payloads does
    not list: the spike events and the types svc-monitor adds."""
    return "\n\n".join(
        f"`{e.name}` ({e.tier}): {e.payload}" for e in EVENT_TYPES if e.payload is not None
    )
