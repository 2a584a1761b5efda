"""The webhook editor: its fields, the event picker, and urlencoded form to API request.

The form is validated by the API's own WebhookCreate/WebhookUpdate, so the page accepts
exactly what `POST/PUT /api/webhooks` accepts; every problem is keyed by the form field
it belongs to (`url`, `thresholds.slowlogCount`), which is where the page shows it.
Ranges and defaults of the number fields are read from those models, never repeated;
the event types, their order, tiers and summaries, and which threshold applies to which
type, from the event table (event_types/).
"""

from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import parse_qs

from annotated_types import Ge, Le
from pydantic import BaseModel, ValidationError

from svc_monitor.detection.alerts.schemas import Thresholds
from svc_monitor.errors import Unprocessable
from svc_monitor.event_types.table import EVENT_TYPES
from svc_monitor.licensing.models import Tier
from svc_monitor.web.forms import MAX_FORM_BYTES
from svc_monitor.webhooks.schemas import (
    AlertConfig,
    DeliveryConfig,
    RetryPolicy,
    WebhookCreate,
    WebhookRead,
    WebhookUpdate,
)

# Blank header rows offered below the stored ones: custom headers are rare and few, and
# blank rows need no script (the page's CSP allows none inline).
BLANK_HEADER_ROWS = 2
_GROUP_MODELS: dict[str, type[BaseModel]] = {
    "thresholds": Thresholds,
    "retryPolicy": RetryPolicy,
    "deliveryConfig": DeliveryConfig,
    "alertConfig": AlertConfig,
}


@dataclass(frozen=True, slots=True)
class NumberField:
    group: str  # the settings object it belongs to, as the API names it
    name: str
    label: str
    hint: str
    step: str = "1"

    @property
    def key(self) -> str:
        """The form field's name and the key of its problem."""
        return f"{self.group}.{self.name}"

    @property
    def minimum(self) -> str:
        return _bound(self, Ge)

    @property
    def maximum(self) -> str:
        return _bound(self, Le)

    @property
    def default(self) -> str:
        return str(_GROUP_MODELS[self.group].model_fields[self.name].default)


def _bound(number: NumberField, kind: type[Ge] | type[Le]) -> str:
    info = _GROUP_MODELS[number.group].model_fields[number.name]
    for item in info.metadata:
        if isinstance(item, Ge):
            if kind is Ge:
                return str(item.ge)
        elif isinstance(item, Le) and kind is Le:
            return str(item.le)
    return ""


@dataclass(frozen=True, slots=True)
class FieldGroup:
    key: str
    title: str
    help: str
    fields: tuple[NumberField, ...]


def _group(key: str, title: str, help: str, *fields: tuple[str, str, str, str]) -> FieldGroup:
    return FieldGroup(key, title, help, tuple(NumberField(key, *f) for f in fields))


def _threshold(name: str, label: str, unit: str) -> tuple[str, str, str, str]:
    """A threshold field, its hint naming the event types it applies to."""
    events = ", ".join(e.name for e in EVENT_TYPES if e.threshold == name)
    return (name, label, f"{unit} ({events})", "1")


FIELD_GROUPS = (
    _group(
        "thresholds",
        "Thresholds",
        "Each applies only to the event it names, for this webhook only.",
        _threshold("memoryCriticalPercent", "Memory critical", "% of maxmemory"),
        _threshold("connectionCriticalPercent", "Connections critical", "% of maxclients"),
        _threshold(
            "complianceMemoryPercent", "Compliance memory", "% of maxmemory under noeviction"
        ),
        _threshold("slowlogCount", "Slow log entries", "entries"),
        _threshold("replicationLagSeconds", "Replication lag", "seconds"),
        _threshold("latencySpikeMs", "Latency spike", "ms; 0 = automatic baseline"),
        _threshold(
            "connectionSpikeCount", "Connection spike", "connections; 0 = automatic baseline"
        ),
    ),
    _group(
        "alertConfig",
        "Alert recovery",
        "A threshold alert fires once, and again only after the value falls below "
        "threshold x factor.",
        ("hysteresisFactor", "Hysteresis factor", "0.5 to 0.99", "0.01"),
    ),
    _group(
        "retryPolicy",
        "Retries",
        "The first attempt is immediate; retry n waits first delay x multiplier^(n-1), "
        "at most the longest delay. After the last retry a delivery is a dead letter.",
        ("maxRetries", "Retries", "after the first attempt", "1"),
        ("initialDelayMs", "First delay", "ms", "1"),
        ("backoffMultiplier", "Backoff multiplier", "each delay x this", "0.1"),
        ("maxDelayMs", "Longest delay", "ms", "1"),
    ),
    _group(
        "deliveryConfig",
        "Delivery",
        "Only a 2xx answer within the timeout counts as delivered.",
        ("timeoutMs", "Timeout", "ms", "1"),
        ("maxResponseBodyBytes", "Response body kept", "bytes of the receiver's answer", "1"),
    ),
)
NUMBER_FIELDS = tuple(f for g in FIELD_GROUPS for f in g.fields)
# Every place the page can show a problem next to a field (the rest go to the summary).
ERROR_SLOTS = (
    "name",
    "url",
    "secret",
    "scope",
    "events",
    "headers",
    *(g.key for g in FIELD_GROUPS),
    *(f.key for f in NUMBER_FIELDS),
)


@dataclass(frozen=True, slots=True)
class WebhookForm:
    """What the editor shows: the stored values, or what was typed."""

    values: dict[str, str]
    events: frozenset[str]
    headers: tuple[tuple[str, str], ...] = ()
    stored_secret: str | None = None  # masked; None when there is none or it is new

    def value(self, key: str) -> str:
        return self.values.get(key, "")

    @property
    def enabled(self) -> bool:
        return self.values.get("enabled") == "on"

    @property
    def header_rows(self) -> list[tuple[str, str]]:
        return [*self.headers, *[("", "")] * BLANK_HEADER_ROWS]


def blank_form() -> WebhookForm:
    values = {f.key: f.default for f in NUMBER_FIELDS}
    return WebhookForm({**values, "enabled": "on"}, frozenset())


def form_of(hook: WebhookRead) -> WebhookForm:
    values = {"name": hook.name, "url": hook.url, "scope": hook.connectionId or ""}
    if hook.enabled:
        values["enabled"] = "on"
    for number in NUMBER_FIELDS:
        values[number.key] = str(getattr(getattr(hook, number.group), number.name))
    return WebhookForm(
        values, frozenset(hook.events), tuple(hook.headers.items()), stored_secret=hook.secret
    )


def parse_webhook_form(body: bytes) -> WebhookForm:
    """The form as typed; repeated fields (events, header rows) keep their order."""
    if len(body) > MAX_FORM_BYTES:
        raise Unprocessable(f"form larger than {MAX_FORM_BYTES} bytes")
    fields = parse_qs(body.decode("utf-8", errors="replace"), keep_blank_values=True)
    names = fields.pop("header_name", [])
    values = fields.pop("header_value", [])
    headers = tuple(
        (n.strip(), v.strip())
        for n, v in zip(names, values, strict=False)
        if n.strip() or v.strip()
    )
    events = frozenset(fields.pop("events", []))
    single = {name: given[-1] for name, given in fields.items()}
    return WebhookForm(single, events, headers)


def to_create(form: WebhookForm) -> WebhookCreate | dict[str, str]:
    """The create request, or the problems keyed by form field."""
    headers = _headers(form)
    if isinstance(headers, str):
        return {"headers": headers}
    data = _common(form, headers)
    if form.value("secret"):
        data["secret"] = form.value("secret")
    return _validate(WebhookCreate, data)


def to_update(form: WebhookForm) -> WebhookUpdate | dict[str, str]:
    """The update request: an empty secret field keeps the stored secret."""
    headers = _headers(form)
    if isinstance(headers, str):
        return {"headers": headers}
    data = _common(form, headers)
    if form.value("clear_secret") == "on":
        data["secret"] = None
    elif form.value("secret"):
        data["secret"] = form.value("secret")
    return _validate(WebhookUpdate, data)


def _headers(form: WebhookForm) -> dict[str, str] | str:
    """The header rows as a mapping, or why they are not one (the service checks the rest)."""
    headers: dict[str, str] = {}
    for name, value in form.headers:
        if not name:
            return "headers: a header value was given without a name"
        if name.lower() in {n.lower() for n in headers}:
            return f"headers: {name} is given twice"
        headers[name] = value
    return headers


def _common(form: WebhookForm, headers: dict[str, str]) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": form.value("name").strip(),
        "url": form.value("url").strip(),
        "events": sorted(form.events, key=_event_order),
        "enabled": form.enabled,
        "headers": headers,
    }
    for group in FIELD_GROUPS:
        typed = {f.name: form.value(f.key).strip() for f in group.fields}
        # A field left empty takes its default, as an API request that omits it would.
        data[group.key] = {name: value for name, value in typed.items() if value}
    return data


RequestT = TypeVar("RequestT", WebhookCreate, WebhookUpdate)


def _validate(model: type[RequestT], data: dict[str, Any]) -> RequestT | dict[str, str]:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        return _problems(exc)


_LABELS = {f.key: f.label for f in NUMBER_FIELDS} | {g.key: g.title for g in FIELD_GROUPS}


def _problems(exc: ValidationError) -> dict[str, str]:
    problems: dict[str, str] = {}
    for error in exc.errors():
        key = ".".join(str(part) for part in error["loc"][:2]) or "form"
        message = str(error["msg"]).removeprefix("Value error, ")
        if error["type"] in ("string_too_short", "too_short", "missing"):
            message = "it is required" if key != "events" else "choose at least one event"
        label = _LABELS.get(key, key)
        problems.setdefault(key, f"{label}: {message}")
    return problems


_POSITION = {e.name: i for i, e in enumerate(EVENT_TYPES)}


def _event_order(event: str) -> int:
    return _POSITION.get(event, len(_POSITION))


@dataclass(frozen=True, slots=True)
class EventChoice:
    name: str
    summary: str  # when it fires, plain text
    tier: Tier  # the tier that unlocks it
    checked: bool
    locked: bool  # the tier in force does not include it: shown, not choosable
    kept: bool = False  # above the tier, but already subscribed (a downgraded install)


@dataclass(frozen=True, slots=True)
class EventTierGroup:
    tier: Tier
    choices: list[EventChoice] = field(default_factory=list)


def event_picker(
    tier: Tier, *, checked: frozenset[str], subscribed: tuple[str, ...] | list[str] = ()
) -> list[EventTierGroup]:
    """Every event by the tier that unlocks it. An event above `tier` that the webhook
    already has stays choosable (the service keeps it), so saving does not drop it."""
    groups = {t: EventTierGroup(t) for t in Tier}
    for entry in EVENT_TYPES:
        event, needs = entry.name, Tier(entry.tier)
        above = not tier.includes(needs)
        kept = above and event in subscribed
        groups[needs].choices.append(
            EventChoice(
                event,
                entry.plain_summary,
                needs,
                event in checked,
                locked=above and not kept,
                kept=kept,
            )
        )
    return list(groups.values())
