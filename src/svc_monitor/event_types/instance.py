"""Whether a connection answers: instance.down and instance.up (pipe/health.py publishes
the bus events, once per transition)."""

from dataclasses import dataclass
from typing import Any

from svc_monitor.event_types.base import Data, EventType, clip, event_type, iso
from svc_monitor.events import InstanceEvent


@dataclass(frozen=True, slots=True, kw_only=True)
class InstanceDown(InstanceEvent):
    """A connection stopped answering (published once per transition)."""

    reason: str  # the EngineError kind: unreachable, timeout, auth, tls, protocol ...
    message: str


@dataclass(frozen=True, slots=True, kw_only=True)
class InstanceUp(InstanceEvent):
    """A connection answers again, or for the first time."""

    down_since_ms: int | None = None


# The state both report: whether the instance answers.
REACHABILITY = "reachability"


def _down(e: InstanceDown) -> Data:
    """the INFO poll failing (once per transition)"""
    return {"message": clip(e.message), "reason": e.reason, "detectedAt": iso(e.at_ms)}


INSTANCE_DOWN = event_type(
    _down,
    name="instance.down",
    order=10,
    tier="community",
    severity="error",
    state=REACHABILITY,
    example=InstanceDown(connection_id="c1", reason="timeout", message="Timed out after 5 s"),
)


def _up(e: InstanceUp) -> Data | None:
    """the INFO poll answering again (once per transition; not at the first contact)"""
    if e.down_since_ms is None:
        return None  # first contact after start: nothing recovered, nothing to announce
    seconds = max(0, (e.at_ms - e.down_since_ms) // 1000)
    return {
        "message": f"Instance is reachable again after {seconds} s down",
        "reason": "recovered",
        "detectedAt": iso(e.at_ms),
        "downSince": iso(e.down_since_ms),
    }


INSTANCE_UP = event_type(
    _up,
    name="instance.up",
    order=20,
    tier="community",
    severity="info",
    state=REACHABILITY,
    example=InstanceUp(connection_id="c1", at_ms=60_000, down_since_ms=30_000),
)


# In the order one bus event's notifications come out (table.candidates).
EVENT_TYPES: tuple[EventType[Any], ...] = (INSTANCE_DOWN, INSTANCE_UP)
