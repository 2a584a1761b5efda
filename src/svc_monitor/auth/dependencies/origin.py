"""Where a request comes from: the client's IP and the origin it was sent from.

Mutations carried by the session cookie must come from our own origin (a CSRF guard
on top of SameSite=Lax): `AUTH_PUBLIC_URL` pins it; without it the request's own
scheme and host count, and with TRUST_PROXY the host the proxy saw. X-Forwarded-* is
read only with TRUST_PROXY, and only from a peer in TRUSTED_PROXIES when that is set;
then only the last X-Forwarded-For entry is believed: it is the one our proxy added,
while the ones before it are whatever the client sent.

Links handed to someone else (invitations, the sign-in return address) use
AUTH_PUBLIC_URL. Without it they are built on this host's own name, never on whatever
Host header a request carried: a request may name this host in it (a loopback name,
BIND_HOST, the host name), and otherwise the link names the host itself.
"""

import functools
import ipaddress
import socket
from urllib.parse import urlsplit

from starlette.requests import HTTPConnection

from svc_monitor.config import Settings


def believes_proxy(connection: HTTPConnection, settings: Settings) -> bool:
    """Whether this request's X-Forwarded-* headers are our proxy's."""
    if not settings.TRUST_PROXY:
        return False
    networks = _networks(settings.TRUSTED_PROXIES)
    if not networks:
        return True
    peer = connection.client.host if connection.client else ""
    try:
        address = ipaddress.ip_address(peer)
    except ValueError:
        return False
    return any(address in network for network in networks)


def client_ip(connection: HTTPConnection, settings: Settings) -> str:
    if believes_proxy(connection, settings):
        forwarded = _last(connection.headers.get("x-forwarded-for"))
        if forwarded:
            return forwarded
    return connection.client.host if connection.client else "unknown"


def expected_origin(connection: HTTPConnection, settings: Settings) -> str:
    if settings.AUTH_PUBLIC_URL:
        return origin_of(settings.AUTH_PUBLIC_URL)
    scheme, host = connection.url.scheme, connection.headers.get("host", "")
    if believes_proxy(connection, settings):
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


def reached_base(connection: HTTPConnection, settings: Settings) -> str:
    """Where this request reached us: for addresses shown back to whoever asked (a
    Collector's config), never handed to someone else."""
    if settings.AUTH_PUBLIC_URL:
        return settings.AUTH_PUBLIC_URL.rstrip("/")
    return expected_origin(connection, settings)


def public_base(connection: HTTPConnection, settings: Settings) -> str:
    """The base of links handed to someone else (an invitation, the sign-in return
    address): AUTH_PUBLIC_URL, else this host's own origin (see the module's docstring)."""
    if settings.AUTH_PUBLIC_URL:
        return settings.AUTH_PUBLIC_URL.rstrip("/")
    origin = expected_origin(connection, settings)
    named = urlsplit(origin).hostname or ""
    if named in _own_names(settings.BIND_HOST):
        return origin
    return f"http://{socket.gethostname().lower()}:{settings.PORT}"


@functools.cache
def _own_names(bind_host: str) -> frozenset[str]:
    names = {"localhost", "127.0.0.1", "::1", socket.gethostname(), socket.getfqdn()}
    if bind_host not in ("0.0.0.0", "::", ""):
        names.add(bind_host)
    return frozenset(name.lower() for name in names)


@functools.cache
def _networks(
    trusted: str,
) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    return tuple(
        ipaddress.ip_network(part.strip(), strict=False)
        for part in trusted.split(",")
        if part.strip()
    )


def _last(value: str | None) -> str | None:
    if not value:
        return None
    last = value.split(",")[-1].strip()
    return last or None
