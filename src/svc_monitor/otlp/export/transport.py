"""One OTLP/HTTP client for both exports (`/v1/metrics` and `/v1/logs`).

Protobuf bodies, gzip (what the Collector's own `otlphttp` exporter sends by default, and
what every OTLP receiver must accept) unless OTEL_EXPORTER_OTLP_COMPRESSION says none, the
headers, URL and TLS files the standard variables set per signal (exporter_options.py),
one aiohttp session with keep-alive. aiohttp, as webhooks/sender.py explains, and
imported on the first push, so an install that exports nothing never loads it. No
retries here: the next interval's push carries newer values, which is what a retry
would have sent.

The endpoint is the operator's own collector, so there is no SSRF check; but the URL may
carry credentials (`https://user:token@collector/`), so error texts never include it.
"""

import asyncio
import gzip
import ssl
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from svc_monitor.otlp.export.exporter_options import SignalOptions

if TYPE_CHECKING:
    import aiohttp

# The same in every release, whatever our version
# (docs/features/otlp-export.md#otlp-export-metrics-and-events).
USER_AGENT = "Svc-Monitor/1.0"
CONTENT_TYPE = "application/x-protobuf"
# The OpenTelemetry SDKs' default (OTEL_EXPORTER_OTLP_TIMEOUT, 10 s).
DEFAULT_TIMEOUT_S = 10.0
# Both exports together: at most 8 metric requests in flight
# (docs/features/otlp-export.md#timing) plus the logs.
MAX_CONNECTIONS = 16
# An error reply is a google.rpc.Status or a line of text; keep enough to read it.
_MAX_REPLY_BYTES = 64 * 1024
_MAX_ERROR_CHARS = 300


@dataclass(frozen=True, slots=True)
class PostResult:
    """What came of one POST: `ok` is a 2xx; `error` is for humans and never names the URL."""

    ok: bool
    status: int | None  # None: nothing answered (refused, timed out, reset)
    error: str | None
    duration_s: float
    body: bytes = b""  # the reply (an Export*ServiceResponse on success, up to 64 KiB)


class OtlpTransport:
    """Posts serialized OTLP messages to each signal's URL: its own (`options[signal].url`)
    or `<endpoint>/v1/<signal>`."""

    def __init__(
        self,
        endpoint: str | None = None,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        options: Mapping[str, SignalOptions] | None = None,
    ) -> None:
        self._base = (endpoint or "").rstrip("/")
        self._timeout_s = timeout_s
        # By signal ("metrics", "logs"): the URL, headers, compression, timeout and TLS
        # files the standard exporter variables ask for (exporter_options.py).
        self._options: dict[str, SignalOptions] = dict(options or {})
        self._tls: dict[str, ssl.SSLContext | None] = {}
        self._session: aiohttp.ClientSession | None = None
        self._closed = False

    def url(self, path: str) -> str:
        options = self._options.get(_signal_of(path))
        if options is not None and options.url:
            return options.url
        return self._base + "/" + path.lstrip("/")

    def exports(self, signal: str) -> bool:
        """Whether `signal` has somewhere to go (its own endpoint or the general one)."""
        options = self._options.get(signal)
        return bool(self._base or (options is not None and options.url))

    def target_of(self, path: str) -> str:
        """scheme://host:port of the collector `path` goes to, safe to log (no credentials,
        no path)."""
        parts = urlsplit(self.url(path))
        host = parts.hostname or ""
        if ":" in host:
            host = f"[{host}]"
        port = f":{parts.port}" if parts.port else ""
        return f"{parts.scheme}://{host}{port}"

    async def post(
        self, path: str, message_bytes: bytes, *, timeout_s: float | None = None
    ) -> PostResult:
        """POST a serialized Export*ServiceRequest to `path` (e.g. "/v1/metrics")."""
        started = time.perf_counter()
        signal = _signal_of(path)
        options = self._options.get(signal)
        compress = options is None or options.gzip
        # The operator's headers first: ours describe the body and must win.
        headers = dict(options.headers) if options is not None else {}
        headers |= {"Content-Type": CONTENT_TYPE, "User-Agent": USER_AGENT}
        if compress:
            body = gzip.compress(message_bytes, compresslevel=6)
            headers["Content-Encoding"] = "gzip"
        else:
            body = message_bytes
        limit = self._timeout_s if options is None else options.timeout_s
        if timeout_s is not None:
            limit = min(limit, timeout_s)
        url = self.url(path)
        try:
            tls = self._tls_for(signal, options)
            async with asyncio.timeout(limit):
                status, reply, text = await self._send(url, headers, body, tls)
        except TimeoutError:
            return _failed(started, None, f"no answer within {limit:g} s")
        except Exception as exc:  # any transport failure is one failed push
            return _failed(started, None, _scrub(_describe(exc), url))
        if 200 <= status < 300:
            return PostResult(True, status, None, time.perf_counter() - started, reply)
        return _failed(started, status, f"HTTP {status}" + (f": {text}" if text else ""), reply)

    def _tls_for(self, signal: str, options: SignalOptions | None) -> ssl.SSLContext | None:
        """The signal's TLS context when its variables name files (built once: loading a
        CA bundle is slow); None: aiohttp's default, the system's trust store."""
        if signal not in self._tls:
            self._tls[signal] = tls_context(options) if options is not None else None
        return self._tls[signal]

    async def close(self) -> None:
        self._closed = True
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def _client(self) -> "aiohttp.ClientSession":
        if self._closed:
            raise RuntimeError("the OTLP transport is closed")
        if self._session is None:
            import aiohttp

            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=MAX_CONNECTIONS),
                cookie_jar=aiohttp.DummyCookieJar(),
            )
        return self._session

    async def _send(
        self, url: str, headers: dict[str, str], body: bytes, tls: ssl.SSLContext | None
    ) -> tuple[int, bytes, str]:
        session = await self._client()
        async with session.post(
            url, data=body, headers=headers, allow_redirects=False, ssl=tls or True
        ) as r:
            reply = await r.content.read(_MAX_REPLY_BYTES)
            return r.status, reply, _readable(reply, r.content_type)


def tls_context(options: SignalOptions) -> ssl.SSLContext | None:
    """A context trusting `options.certificate` alone (when set) and presenting the client
    pair (when set); None when neither is set. The files were checked at start-up; a file
    changed since fails the push, not the service."""
    if options.certificate is None and options.client_certificate is None:
        return None
    context = ssl.create_default_context(
        cafile=str(options.certificate) if options.certificate else None
    )
    if options.client_certificate is not None and options.client_key is not None:
        context.load_cert_chain(options.client_certificate, options.client_key)
    return context


def _signal_of(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1]


def _scrub(text: str, url: str) -> str:
    """`text` without the URL's path, query or credentials (an InvalidURL names it)."""
    parts = urlsplit(url)
    for secret in (url, parts.password, parts.username, parts.query, parts.path):
        if secret and len(secret) > 1:
            text = text.replace(secret, "***")
    return text


def _readable(reply: bytes, content_type: str) -> str:
    """The reply as a short text when it is text; a protobuf Status stays unread."""
    if not reply or not (content_type.startswith("text/") or content_type.endswith("json")):
        return ""
    return reply.decode("utf-8", errors="replace").strip()[:_MAX_ERROR_CHARS]


def _failed(started: float, status: int | None, error: str, body: bytes = b"") -> PostResult:
    return PostResult(False, status, error, time.perf_counter() - started, body)


def _describe(exc: BaseException) -> str:
    # aiohttp's texts name host and port, never the path, query or userinfo.
    text = str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {text}"[:_MAX_ERROR_CHARS]
