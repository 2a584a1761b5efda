"""Where a request comes from: the client's IP and the origin it was sent from.

Mutations carried by the session cookie must come from our own origin (a CSRF guard
on top of SameSite=Lax): `AUTH_PUBLIC_URL` pins it; without it the request's own
scheme and host count, and with TRUST_PROXY the host the proxy saw. Behind a proxy
only the last X-Forwarded-For entry is believed: it is the one our proxy added, while
the ones before it are whatever the client sent.
"""

from urllib.parse import urlsplit

from starlette.requests import HTTPConnection

from svc_monitor.config import Settings


def client_ip(connection: HTTPConnection, settings: Settings) -> str:
    if settings.TRUST_PROXY:
        forwarded = _last(connection.headers.get("x-forwarded-for"))
        if forwarded:
            return forwarded
    return connection.client.host if connection.client else "unknown"


def expected_origin(connection: HTTPConnection, settings: Settings) -> str:
    if settings.AUTH_PUBLIC_URL:
        return origin_of(settings.AUTH_PUBLIC_URL)
    scheme, host = connection.url.scheme, connection.headers.get("host", "")
    if settings.TRUST_PROXY:
        scheme = _last(connection.headers.get("x-forwarded-proto")) or scheme
        host = _last(connection.headers.get("x-forwarded-host")) or host
    if scheme == "ws":
        scheme = "http"
    elif scheme == "wss":
        scheme = "https"
    return f"{scheme}://{host}".lower()


def same_origin(connection: HTTPConnection, settings: Settings) -> bool:
    """Whether a browser says this request came from our own pages.

    Browsers send Origin on every POST, PUT, PATCH and DELETE and on WebSocket handshakes;
    without it, a same-origin Referer will do. Neither is refused: a cookie-carrying
    mutation with no provenance at all is not what our pages send.
    """
    if connection.headers.get("sec-fetch-site") == "cross-site":
        return False
    expected = expected_origin(connection, settings)
    origin = connection.headers.get("origin")
    if origin is not None:
        return origin.lower() == expected
    referer = connection.headers.get("referer")
    return referer is not None and origin_of(referer) == expected


def origin_of(url: str) -> str:
    parts = urlsplit(url)
    if not parts.scheme or not parts.netloc:
        return ""
    netloc = parts.hostname or ""
    if ":" in netloc:
        netloc = f"[{netloc}]"
    default = {"http": 80, "https": 443}.get(parts.scheme.lower())
    if parts.port is not None and parts.port != default:
        netloc = f"{netloc}:{parts.port}"
    return f"{parts.scheme}://{netloc}".lower()


def public_base(connection: HTTPConnection, settings: Settings) -> str:
    """The base of links we hand out (invitation links)."""
    if settings.AUTH_PUBLIC_URL:
        return settings.AUTH_PUBLIC_URL.rstrip("/")
    return expected_origin(connection, settings)


def _last(value: str | None) -> str | None:
    if not value:
        return None
    last = value.split(",")[-1].strip()
    return last or None
