"""The Add/Edit Connection form: urlencoded fields to the API's own request models.

The form is parsed here rather than through FastAPI's `Form`, which needs the
python-multipart package for what is a few short text fields.
"""

from dataclasses import dataclass
from typing import TypeVar
from urllib.parse import parse_qs

from pydantic import ValidationError

from svc_monitor.connections.schemas import ConnectionFields
from svc_monitor.errors import Unprocessable

MAX_FORM_BYTES = 16 * 1024

ModelT = TypeVar("ModelT", bound=ConnectionFields)


@dataclass(frozen=True, slots=True)
class ConnectionForm:
    """The values the dialog opens with (a new connection's defaults, or the stored ones)."""

    values: dict[str, str]

    def value(self, name: str) -> str:
        return self.values.get(name, "")


def parse_form(body: bytes) -> dict[str, str]:
    if len(body) > MAX_FORM_BYTES:
        raise Unprocessable(f"form larger than {MAX_FORM_BYTES} bytes")
    fields = parse_qs(body.decode("utf-8", errors="replace"), keep_blank_values=True)
    return {name: values[-1] for name, values in fields.items()}


def to_request(
    model: type[ModelT], values: dict[str, str], *, editing: bool = False
) -> ModelT | dict[str, str]:
    """The request model, or the problems keyed by form field."""
    data: dict[str, object] = {}
    quick = values.get("quick", "").strip()
    host = values.get("host", "").strip()
    if "://" in quick:
        data["url"] = quick
    elif quick and not host:
        host = quick
    if host:
        data["host"] = host
    for name in ("name", "username"):
        if values.get(name, "").strip():
            data[name] = values[name]
    if values.get("port", "").strip():
        data["port"] = values["port"].strip()
    if values.get("password"):
        data["password"] = values["password"]
    elif editing and values.get("clear_password") == "on":
        data["password"] = ""
    checked = values.get("tls") == "on"
    if editing or checked:  # unchecked on a new connection: the URL's scheme decides
        data["tls"] = checked
    if values.get("set_default") == "on":
        data["set_as_default"] = True
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        return _problems(exc)


def to_push_request(
    model: type[ModelT], values: dict[str, str], *, editing: bool = False
) -> ModelT | dict[str, str]:
    """A push connection's request: name, host and port only (no credentials, nothing
    to dial). The engine and Valkey version fields only shape the Collector's config."""
    data: dict[str, object] = {}
    for name in ("name", "host", "port"):
        if values.get(name, "").strip():
            data[name] = values[name].strip()
    if not editing:
        data["source"] = "push"
        if values.get("set_default") == "on":
            data["set_as_default"] = True
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        return _problems(exc)


def _problems(exc: ValidationError) -> dict[str, str]:
    problems: dict[str, str] = {}
    for error in exc.errors():
        location = str(error["loc"][0]) if error["loc"] else "form"
        name = {"url": "quick", "setAsDefault": "set_default"}.get(location, location)
        message = str(error["msg"]).removeprefix("Value error, ")
        problems.setdefault(name, message)
    return problems
