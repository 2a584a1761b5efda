"""The effective value of every field of a pydantic-settings model and where it came from.

`svc-monitor config` prints this, so an operator can see what a process would run with
without starting it. A secret is never shown: a field typed SecretStr, or named for a
secret (`..._PASSWORD`, `..._TOKEN`, `..._KEY`, `..._HEADERS` ...), reads as MASK when set;
a password inside any URL value is masked too.
"""

import enum
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

from pydantic import SecretBytes, SecretStr
from pydantic_settings import BaseSettings

MASK = "********"
Source = Literal["environment", "default"]

# The last word of a variable's name that marks its value as secret. The last word only:
# KEY_ANALYTICS_SAMPLE_SIZE is a number, DB_TLS_KEY_FILE a path, ENCRYPTION_KEY a secret.
# HEADERS: header lists carry API keys and bearer tokens (OTEL_EXPORTER_OTLP_HEADERS).
_SECRET_LAST_WORDS = frozenset(
    {"PASSWORD", "PASSPHRASE", "SECRET", "TOKEN", "KEY", "HEADERS", "SALT", "CREDENTIALS"}
)


@dataclass(frozen=True)
class ReportedSetting:
    name: str
    value: str | int | float | bool | None  # JSON-ready, already masked
    source: Source
    secret: bool


def report(settings: BaseSettings, environ: Mapping[str, str]) -> list[ReportedSetting]:
    """Every field of `settings` in declaration order, read from the model (the values it
    will run with, after validation) with its source looked up in `environ`, the mapping
    the model was built from."""
    fields = type(settings).model_fields
    case_sensitive = bool(settings.model_config.get("case_sensitive", False))
    names = set(environ) if case_sensitive else {k.upper() for k in environ}
    rows = []
    for name in fields:
        raw = getattr(settings, name)
        secret = is_secret(name, raw, fields[name].annotation)
        key = name if case_sensitive else name.upper()
        rows.append(
            ReportedSetting(
                name=name,
                value=_shown(raw, secret=secret),
                source="environment" if key in names else "default",
                secret=secret,
            )
        )
    return rows


def is_secret(name: str, value: Any, annotation: Any) -> bool:
    if isinstance(value, SecretStr | SecretBytes) or _names_secret_type(annotation):
        return True
    if name.upper().endswith("PUBLIC_KEY"):  # public by definition; shown so it can be checked
        return False
    if _names_type(annotation, PurePath):  # where a key file lies, not the key: shown to be checked
        return False
    return name.upper().rsplit("_", 1)[-1] in _SECRET_LAST_WORDS


def as_text(rows: list[ReportedSetting]) -> str:
    # The value last: URLs and paths are long, the names and sources are not.
    width = max(len(r.name) for r in rows)
    lines = [f"{'NAME':<{width}}  {'SOURCE':<11}  VALUE"]
    lines += [f"{r.name:<{width}}  {r.source:<11}  {_text_value(r.value)}" for r in rows]
    return "\n".join(lines)


def as_json(rows: list[ReportedSetting]) -> str:
    return json.dumps(
        {r.name: {"value": r.value, "source": r.source, "secret": r.secret} for r in rows},
        indent=2,
    )


def _names_secret_type(annotation: Any) -> bool:
    return _names_type(annotation, SecretStr) or _names_type(annotation, SecretBytes)


def _names_type(annotation: Any, kind: type) -> bool:
    # `SecretStr | None` and Annotated[SecretStr, ...] keep the type in their arguments.
    if isinstance(annotation, type) and issubclass(annotation, kind):
        return True
    return any(_names_type(arg, kind) for arg in getattr(annotation, "__args__", ()))


def _shown(value: Any, *, secret: bool) -> str | int | float | bool | None:
    if value is None:
        return None
    if secret:
        return MASK
    if isinstance(value, enum.Enum):
        value = value.value
    if isinstance(value, bool | int | float):
        return value
    if isinstance(value, PurePath):
        return str(value)
    return _without_url_password(str(value))


def _without_url_password(text: str) -> str:
    # A URL setting not typed as a secret may still carry user:password@.
    try:
        parts = urlsplit(text)
        password = parts.password
    except ValueError:
        return text
    if not password:
        return text
    host = parts.netloc.rsplit("@", 1)[1]
    user = parts.username or ""
    return urlunsplit(parts._replace(netloc=f"{user}:{MASK}@{host}"))


def _text_value(value: str | int | float | bool | None) -> str:
    if value is None:
        return "(unset)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if value == "":
        return '""'
    # One line per setting: a PEM value shows its line breaks as \n.
    return str(value).replace("\r", "\\r").replace("\n", "\\n")
