"""Quick-connect URLs and `host:port` strings, as providers hand them out."""

from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

# valkey:// and valkeys:// are what Valkey's own tools print; redis(s):// what everyone else does.
_SCHEMES = {"redis": False, "valkey": False, "rediss": True, "valkeys": True}


@dataclass(frozen=True, slots=True)
class ParsedUrl:
    host: str
    port: int | None
    username: str | None
    password: str | None
    tls: bool
    db: int | None


def parse_connection_url(url: str) -> ParsedUrl:
    """`redis://user:password@host:port/db`; ValueError with a message for people."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as exc:
        raise ValueError(f"not a valid connection URL ({exc})") from None
    scheme = parts.scheme.lower()
    if scheme not in _SCHEMES:
        raise ValueError("must start with redis://, rediss://, valkey:// or valkeys://")
    if not parts.hostname:
        raise ValueError("has no host")
    if not is_plain_host(parts.hostname):
        raise ValueError(f"host '{parts.hostname}' is not a host name or IP address")
    if port == 0:
        raise ValueError("port must be between 1 and 65535")
    db: int | None = None
    path = parts.path.strip("/")
    if path:
        if not _is_decimal(path) or int(path) > 65535:
            raise ValueError(f"database '{path}' is not a number from 0 to 65535")
        db = int(path)
    return ParsedUrl(
        host=parts.hostname,
        port=port,
        username=unquote(parts.username) if parts.username else None,
        password=unquote(parts.password) if parts.password is not None else None,
        tls=_SCHEMES[scheme],
        db=db,
    )


def is_plain_host(name: str) -> bool:
    """A name or address with nothing that would change what a URL or command means.

    Control characters count too: a host name never holds one, and one in the
    Collector's YAML makes the whole file unreadable."""
    return bool(name) and all(
        c.isprintable() and not c.isspace() and c not in "/@?#[]" for c in name
    )


def split_host_port(host: str) -> tuple[str, int | None]:
    """`example.com:12000` -> ("example.com", 12000); `[::1]:6380` and bare IPv6 work too."""
    host = host.strip()
    if host.startswith("["):
        inside, bracket, rest = host[1:].partition("]")
        if not bracket:
            raise ValueError("has an IPv6 address without its closing ']'")
        if not rest:
            return inside, None
        if not rest.startswith(":"):
            raise ValueError("has text after the ']' of an IPv6 address")
        return inside, _port(rest[1:])
    if host.count(":") == 1:
        name, _, port = host.partition(":")
        return name, _port(port)
    return host, None  # a name, an IPv4 address or a bare IPv6 address


def _is_decimal(text: str) -> bool:
    # str.isdigit() also accepts '²' (which int() refuses) and other scripts' digits.
    return text.isascii() and text.isdigit()


def _port(text: str) -> int:
    if not _is_decimal(text) or not 1 <= int(text) <= 65535:
        raise ValueError(f"port '{text}' must be a number between 1 and 65535")
    return int(text)
