"""Webhook URLs: what is accepted when a webhook is saved, and how a delivery URL is built.

Whether the host is a private address is decided later, by `ssrf.resolve_target`, both
at save time and before every delivery; this module only makes sure there is exactly one
reading of the URL, so the host validated is the host connected to.
"""

import ipaddress
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

MAX_URL_LENGTH = 2048
_DEFAULT_PORTS = {"http": 80, "https": 443}
# Lower-case letters because urlsplit lower-cases the host; `_` appears in real internal
# names. Non-ASCII names are refused: a homograph would look like a trusted host.
_HOST_NAME = re.compile(r"[a-z0-9_.-]+")


@dataclass(frozen=True, slots=True)
class WebhookUrl:
    """A parsed webhook URL; `host` is lower-case, without brackets, maybe an IP literal."""

    scheme: str
    host: str
    port: int
    path_and_query: str

    @property
    def host_header(self) -> str:
        """The Host header value: the name as written, the port only when not the default."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port == _DEFAULT_PORTS[self.scheme] else f"{host}:{self.port}"

    @property
    def url(self) -> str:
        """The URL in normal form (fragment and default port dropped)."""
        return f"{self.scheme}://{self.host_header}{self.path_and_query}"


def parse_webhook_url(url: str, *, allow_http: bool) -> WebhookUrl:
    """Check a webhook URL as typed by a user; ValueError with a message for them."""
    if len(url) > MAX_URL_LENGTH:
        raise ValueError(f"the URL is longer than {MAX_URL_LENGTH} characters")
    # Checked before urlsplit, which silently drops tabs and newlines and strips leading
    # control characters. A backslash is a "/" to browsers but not to urlsplit, so the two
    # would read a different host: refused rather than guessed.
    if any(_is_control(c) or c.isspace() for c in url):
        raise ValueError("the URL contains whitespace or control characters")
    if "\\" in url:
        raise ValueError("the URL contains a backslash")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:  # bad brackets, a non-numeric or out-of-range port
        raise ValueError(f"the URL is not valid ({exc})") from None
    scheme = parts.scheme.lower()
    if scheme != "https" and not (scheme == "http" and allow_http):
        if allow_http:
            raise ValueError("the URL must start with https:// or http://")
        raise ValueError("HTTPS is required; HTTP is allowed only with NODE_ENV=development")
    if "@" in parts.netloc:
        raise ValueError(
            "credentials in the URL are not allowed; "
            "put them in a custom Authorization header instead"
        )
    host = parts.hostname
    if not host:
        raise ValueError("the URL has no host")
    _check_host(host, bracketed="[" in parts.netloc)
    if port == 0:
        raise ValueError("the URL's port must be between 1 and 65535")
    path_and_query = parts.path or "/"
    if parts.query:
        path_and_query += f"?{parts.query}"
    return WebhookUrl(
        scheme=scheme,
        host=host,
        port=port if port is not None else _DEFAULT_PORTS[scheme],
        path_and_query=path_and_query,
    )


def _check_host(host: str, *, bracketed: bool) -> None:
    if bracketed:
        try:
            ipaddress.IPv6Address(host.split("%", 1)[0])
        except ValueError:
            raise ValueError(f"the URL's host [{host}] is not an IPv6 address") from None
        return
    if not host.isascii():
        raise ValueError(
            "the URL's host name must be ASCII; write an international name in its "
            "xn-- (punycode) form"
        )
    if not _HOST_NAME.fullmatch(host):
        raise ValueError(f"the URL's host {host} is not a host name or IP address")


def _is_control(char: str) -> bool:
    code = ord(char)
    return code < 0x20 or 0x7F <= code <= 0x9F
