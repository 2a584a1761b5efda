"""Every webhook event type, and the notifications a bus event turns into.

Both consumers of the bus that tell people use this one table: webhooks
(webhooks/dispatcher.py) and the OTLP event export (otlp/export/events.py). Each area
module lists its types in its `EVENT_TYPES`, so a new type in an existing area needs no
change here.
"""

from typing import Any

from svc_monitor.event_types import (
    access,
    cluster,
    detection,
    instance,
    migration,
    readings,
    vector,
)
from svc_monitor.event_types.base import Candidate, EventType
from svc_monitor.events import Event

AREAS = (instance, readings, cluster, access, detection, vector, migration)
# Each area in its own order: the order of one bus event's notifications.
_DECLARED: tuple[EventType[Any], ...] = tuple(e for area in AREAS for e in area.EVENT_TYPES)

# Every type in list order (EventType.order).
EVENT_TYPES: tuple[EventType[Any], ...] = tuple(sorted(_DECLARED, key=lambda e: e.order))
BY_NAME: dict[str, EventType[Any]] = {e.name: e for e in EVENT_TYPES}


def _by_state() -> dict[str, tuple[str, ...]]:
    found: dict[str, list[str]] = {}
    for entry in EVENT_TYPES:
        if entry.state is not None:
            found.setdefault(entry.state, []).append(entry.name)
    return {state: tuple(names) for state, names in found.items()}


# Each state (EventType.state) and the types that report it.
STATES: dict[str, tuple[str, ...]] = _by_state()


def state_of(event_type: str) -> str | None:
    """The state `event_type` reports, or None for an occurrence (or an unknown name)."""
    entry = BY_NAME.get(event_type)
    return entry.state if entry is not None else None


def _by_source() -> dict[type[Event], tuple[EventType[Any], ...]]:
    found: dict[type[Event], list[EventType[Any]]] = {}
    for entry in _DECLARED:
        found.setdefault(entry.source, []).append(entry)
    return {source: tuple(entries) for source, entries in found.items()}


_BY_SOURCE = _by_source()


def candidates(event: Event) -> list[Candidate]:
    """Every notification `event` may turn into; empty for events nobody is told of."""
    found = []
    for entry in _BY_SOURCE.get(type(event), ()):
        candidate = entry.candidate(event)
        if candidate is not None:
            found.append(candidate)
    return found
