"""The Add/Edit Connection form: urlencoded fields to the API's own request models.

The form is parsed here rather than through FastAPI's `Form`, which needs the
python-multipart package for what is a few short text fields. PEM files chosen in the
dialog are read into their text areas by the browser (static/app.js), so the connection
form stays urlencoded too, only larger (CONNECTION_FORM_BYTES).
"""

from dataclasses import dataclass
from typing import TypeVar, get_args
from urllib.parse import parse_qs

from pydantic import ValidationError
from pydantic.alias_generators import to_camel
from starlette.requests import Request

from svc_monitor.connections.models import SshTunnel
from svc_monitor.connections.schemas import ConnectionFields
from svc_monitor.engine.ssh_spec import SshAuth
from svc_monitor.errors import Unprocessable

MAX_FORM_BYTES = 16 * 1024
# The connection dialog carries PEM text: a CA bundle (up to 256 KiB), a client certificate
# (64 KiB) and key (32 KiB), an SSH key (32 KiB); urlencoding base64 adds about a tenth.
CONNECTION_FORM_BYTES = 512 * 1024
SSH_AUTH_METHODS: tuple[str, ...] = get_args(SshAuth)
_TLS_SCHEMES = ("rediss://", "valkeys://")
_CLIENT_PAIR = frozenset({"tls_cert", "tls_key"})

ModelT = TypeVar("ModelT", bound=ConnectionFields)


@dataclass(frozen=True, slots=True)
class ConnectionForm:
    """The values the dialog opens with (a new connection's defaults, or the stored ones)."""

    values: dict[str, str]

    def value(self, name: str) -> str:
        return self.values.get(name, "")


def parse_form(body: bytes, *, limit: int = MAX_FORM_BYTES) -> dict[str, str]:
    if len(body) > limit:
        raise Unprocessable(f"form larger than {limit} bytes")
    fields = parse_qs(body.decode("utf-8", errors="replace"), keep_blank_values=True)
    return {name: values[-1] for name, values in fields.items()}


async def read_form(request: Request, *, limit: int = MAX_FORM_BYTES) -> dict[str, str]:
    """The posted form, refused as soon as it passes `limit` (never read whole first)."""
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise Unprocessable(f"form larger than {limit} bytes")
    return parse_form(bytes(body), limit=limit)


def to_request(
    model: type[ModelT],
    values: dict[str, str],
    *,
    editing: bool = False,
    stored_tunnel: SshTunnel | None = None,
) -> ModelT | dict[str, str]:
    """The request model, or the problems keyed by field (the API's names).

    `stored_tunnel` is the edited connection's tunnel: its pin is kept when the form
    leaves the fingerprint empty (only Re-pin clears it)."""
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
    if checked or quick.lower().startswith(_TLS_SCHEMES):
        data.update(_tls_fields(values, editing=editing))
    if values.get("ssh") == "on":
        data["ssh_tunnel"] = _ssh_tunnel(values, stored=stored_tunnel)
    elif editing:
        data["ssh_tunnel"] = None  # unticked: the connection is reached directly
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


def _tls_fields(values: dict[str, str], *, editing: bool) -> dict[str, object]:
    """The TLS material, read only while TLS is on (otherwise what is stored stays).
    An empty text area keeps the stored PEM; a Remove box sends "" (the API's clear)."""
    data: dict[str, object] = {}
    for name in ("tls_ca_cert", "tls_cert", "tls_key"):
        if text := _pem(values.get(name, "")):
            data[name] = text
    if editing and values.get("clear_tls_ca_cert") == "on":
        data.setdefault("tls_ca_cert", "")
    # A client certificate and its key go as a pair, so Remove takes both (unless new ones
    # were pasted, which replace them).
    if editing and values.get("clear_tls_client") == "on" and not data.keys() & _CLIENT_PAIR:
        data.update(dict.fromkeys(_CLIENT_PAIR, ""))
    insecure = values.get("tls_insecure") == "on"
    if editing or insecure:
        data["tls_insecure"] = insecure
    return data


def _ssh_tunnel(values: dict[str, str], *, stored: SshTunnel | None) -> dict[str, object]:
    """The sshTunnel body: the bastion, and only the secrets of the chosen method (a key
    typed under another method is ignored, not stored). Secrets left empty keep theirs."""
    method = values.get("ssh_auth", "")
    tunnel: dict[str, object] = {
        "host": values.get("ssh_host", "").strip(),
        "port": values.get("ssh_port", "").strip() or "22",
        "username": values.get("ssh_username", "").strip(),
        "auth_method": method if method in SSH_AUTH_METHODS else "password",
    }
    if tunnel["auth_method"] == "privateKey":
        key = _pem(values.get("ssh_private_key", ""))
        path = values.get("ssh_key_path", "").strip()
        if key:
            tunnel["private_key"] = key + "\n"  # OpenSSH refuses a key without it
        elif path:
            tunnel["private_key_path"] = path
        if values.get("ssh_passphrase"):
            tunnel["passphrase"] = values["ssh_passphrase"]
    elif values.get("ssh_password"):
        tunnel["password"] = values["ssh_password"]
    fingerprint = values.get("ssh_fingerprint", "").strip()
    same_bastion = stored is not None and (stored.host, str(stored.port)) == (
        tunnel["host"],
        tunnel["port"],
    )
    if not fingerprint and same_bastion and stored is not None:
        # Pinned after this dialog opened (its first connection): kept; Re-pin clears.
        fingerprint = stored.host_key_fingerprint or ""
    if fingerprint:
        tunnel["host_key_fingerprint"] = fingerprint
    return tunnel


def _pem(text: str) -> str:
    """A text area's PEM as typed, with the CRLFs a form submission adds turned back."""
    return text.replace("\r\n", "\n").strip()


def _problems(exc: ValidationError) -> dict[str, str]:
    problems: dict[str, str] = {}
    for error in exc.errors():
        path = [str(part) for part in error["loc"] if isinstance(part, str)]
        location = ".".join(to_camel(part) for part in path) if path else "form"
        name = {"url": "quick", "setAsDefault": "set_default"}.get(location, location)
        message = str(error["msg"]).removeprefix("Value error, ")
        problems.setdefault(name, message)
    return problems
