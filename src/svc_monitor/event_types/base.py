"""The record that declares one webhook event type, and the notifications it builds.

An event type (`instance.down`, `memory.critical` ...) is declared once, in the area
module beside the bus event it comes from (instance.py, readings.py, cluster.py,
access.py, detection.py), right under its payload builder: `event_type(builder, ...)`.
The builder's docstring is the type's documentation (its first paragraph says when the
type fires; a second one describes the payload of a type whose fields
docs/features/webhooks.md#payloads does not list), and
the example bus event names the class it is built from. table.py gathers them. Everything
else that names event types reads that table: the licence gates (licensing/models.py),
the OTLP log severity (otlp/export/event_records.py), the webhook form, OpenAPI's
description of the webhooks tag with its table of every type (docs.py).

A bus event becomes a notification in one of two ways:
- an occurrence fires every time (instance.down, acl.modified, cve.detected ...): its
  builder returns the `data` payload;
- a threshold event comes from a reading (memory, clients, replication, slow log,
  latency): its builder returns a `Measurement`, the value and the payload for a given
  level, and detection judges the value for each consumer against that consumer's
  `Thresholds` field named by the entry (detection/alerts/schemas.py), with hysteresis
  (detection/alerts/service.py).

Strings that come from a server (user names, keys, config values) are clipped so one
event can never make a huge body.
"""

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Generic, Literal, TypeVar

from pydantic.alias_generators import to_camel

from svc_monitor.events import InstanceEvent

MAX_TEXT = 1024  # characters of any one server-provided string in a payload

Data = dict[str, Any]
# The tier that may subscribe (licensing's Tier, by value).
TierName = Literal["community", "pro", "enterprise"]
# The default severity of its OTLP log record (otlp/export/event_records.py maps it to a
# SeverityNumber): unreachable is an error; a crossed threshold, a denial or a cluster
# change is a warning someone should look at; recoveries and changes made on purpose
# are information.
SeverityName = Literal["info", "warn", "error"]

E = TypeVar("E", bound=InstanceEvent)


@dataclass(frozen=True, slots=True)
class Occurrence:
    """A notification that fires whenever its event happens."""

    event_type: str
    data: Data


@dataclass(frozen=True, slots=True)
class Measured:
    """A notification that fires when `value` crosses a consumer's level for it."""

    event_type: str
    value: float
    threshold: str  # the Thresholds field that holds the level
    # The data payload for the level that was crossed.
    data: Callable[[float], Data]
    # The automatic baseline's level, used where the threshold field is 0; None while
    # the baseline is still learning (or for a field that has no automatic level).
    automatic: float | None = None


Candidate = Occurrence | Measured


@dataclass(frozen=True, slots=True)
class Measurement:
    """What a threshold event's builder returns: the value to judge and its payload."""

    value: float
    data: Callable[[float], Data]
    automatic: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class EventType(Generic[E]):
    """One webhook event type: where it comes from, what it sends, who may have it."""

    name: str
    # Where the type appears in every list of event types (the webhook form,
    # /webhooks/allowed-events, the error naming the known types, the API docs). Unique;
    # the gaps leave room for a new type between two.
    order: int
    source: type[E]  # the bus event it is built from (exactly this class)
    build: Callable[[E], Data | Measurement | None]  # None: this event sends nothing
    tier: TierName
    severity: SeverityName
    summary: str  # when it fires, one line of Markdown (the API docs' table, the form)
    threshold: str | None = None  # the Thresholds field of a threshold event
    # The state this type reports, named alike on the types that report the same thing
    # (instance.down and instance.up: whether the instance answers). A newer notification
    # of a state supersedes an older one not yet delivered (webhooks/states.py). None for
    # a type that reports an occurrence, which every notification of stands on its own.
    state: str | None = None
    # The payload in a sentence or two, for a type whose fields
    # docs/features/webhooks.md#payloads does not list (the spike events, the types
    # svc-monitor adds): OpenAPI's description of the webhooks tag shows it.
    payload: str | None = None
    # A bus event this type turns into a notification: the table's tests build every
    # type from it, so a new type needs no change to them.
    example: E

    def candidate(self, event: E) -> Candidate | None:
        """This type's notification for `event`; None when the event sends none of it."""
        built = self.build(event)
        if built is None:
            return None
        if isinstance(built, Measurement):
            if self.threshold is None:
                raise TypeError(f"{self.name} measures a value but names no threshold field")
            return Measured(self.name, built.value, self.threshold, built.data, built.automatic)
        if self.threshold is not None:
            raise TypeError(f"{self.name} names a threshold field but built no measurement")
        return Occurrence(self.name, built)

    @property
    def plain_summary(self) -> str:
        """The summary without Markdown, for a tooltip."""
        return self.summary.replace("`", "")


def event_type(
    build: Callable[[E], Data | Measurement | None],
    *,
    name: str,
    order: int,
    tier: TierName,
    example: E,
    severity: SeverityName = "warn",
    threshold: str | None = None,
    state: str | None = None,
) -> EventType[E]:
    """The EventType whose payload `build` builds: its summary and payload note come from
    the builder's docstring, its source from the example's class."""
    summary, payload = _documented(build)
    return EventType(
        name=name,
        order=order,
        source=type(example),
        build=build,
        tier=tier,
        severity=severity,
        summary=summary,
        threshold=threshold,
        state=state,
        payload=payload,
        example=example,
    )


def _documented(build: Callable[..., object]) -> tuple[str, str | None]:
    """(first paragraph, second paragraph or None) of a builder's docstring, each on one
    line."""
    paragraphs: list[str] = []
    current: list[str] = []
    for line in [*(build.__doc__ or "").splitlines(), ""]:
        if line.strip():
            current.append(line.strip())
        elif current:
            paragraphs.append(" ".join(current))
            current = []
    if not paragraphs:
        raise TypeError(f"{build.__name__} needs a docstring: when its event type fires")
    return paragraphs[0], paragraphs[1] if len(paragraphs) > 1 else None


def fields_of(event: InstanceEvent, *names: str, **more: Any) -> Data:
    """A payload of the event's fields under their camelCase names (in the order given),
    then `more` as given: the payload's keys keep that order in the JSON body."""
    return {**{to_camel(name): getattr(event, name) for name in names}, **more}


def share_of_limit(
    metric: str, used: tuple[str, int], limit: tuple[str, int], message: Callable[[float], str]
) -> Measurement:
    """A threshold payload for a value that is a percentage of a limit (memory against
    maxmemory, clients against maxclients): `used` and `limit` are (payload key, value)."""
    pct = percent(used[1], limit[1])

    def data(threshold: float) -> Data:
        return {
            "metric": metric,
            "value": pct,
            "threshold": threshold,
            limit[0]: limit[1],
            used[0]: used[1],
            "message": message(threshold),
        }

    return Measurement(pct, data)


def iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat().replace("+00:00", "Z")


def clip(text: str) -> str:
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + "..."


def percent(part: int, whole: int) -> float:
    return round(part / whole * 100, 2)


def number(value: float) -> str:
    """1.5 as 1.5, a byte ceiling as 536870912 (not :g's 5.36871e+08)."""
    return f"{value:.0f}" if value.is_integer() else f"{value:g}"
