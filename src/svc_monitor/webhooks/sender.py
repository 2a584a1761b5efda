"""One POST of a signed envelope to a receiver, and what came of it.

aiohttp rather than httpx (DESIGN's choice for outbound HTTP): on this machine httpx
managed 330-540 POSTs/s to a local receiver against aiohttp's 7,180, and the webhook
target is 1,000 deliveries/s. It is imported on first use, so an install without
webhooks never loads it.

SSRF: every attempt checks its target again. A literal address is checked here; a name
goes through `_CheckingResolver`, which resolves it and refuses the connection if ANY
address it resolves to is private, then connects only to the addresses it checked: a
name that changes its answer between save and send (DNS rebinding) cannot slip past.
Redirects are never followed (a 3xx is an ordinary failed attempt).
"""

import asyncio
import socket
import time
from typing import TYPE_CHECKING, Any, cast

from svc_monitor.webhooks import ssrf
from svc_monitor.webhooks.models import AttemptResult, Webhook
from svc_monitor.webhooks.signing import signature
from svc_monitor.webhooks.targets import parse_webhook_url

if TYPE_CHECKING:
    import aiohttp
    import aiohttp.abc

# The same in every release, whatever our version (docs/features/webhooks.md#delivery).
USER_AGENT = "Svc-Monitor/1.0"
# Connections kept open in all, and per receiver: 100 webhooks on one host all get
# their own keep-alive connection without one slow receiver taking every socket.
MAX_CONNECTIONS = 512
MAX_CONNECTIONS_PER_HOST = 256
_CHECKED_URLS = 10_000  # cached URL verdicts (one per webhook URL in practice)


class _TargetRefused(OSError):
    """Raised inside aiohttp's resolver; aiohttp hands OSErrors back as connector errors."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class Sender:
    """Posts envelopes; one aiohttp session (keep-alive pool) for the whole service."""

    def __init__(self, *, allow_loopback: bool, allow_http: bool) -> None:
        self._allow_loopback = allow_loopback
        self._allow_http = allow_http
        self._session: aiohttp.ClientSession | None = None
        self._checked: dict[str, str | None] = {}

    async def _client(self) -> "aiohttp.ClientSession":
        if self._session is None:
            import aiohttp

            connector = aiohttp.TCPConnector(
                limit=MAX_CONNECTIONS,
                limit_per_host=MAX_CONNECTIONS_PER_HOST,
                use_dns_cache=False,  # every new connection resolves and checks again
                resolver=cast(
                    "aiohttp.abc.AbstractResolver",
                    _CheckingResolver(allow_loopback=self._allow_loopback),
                ),
            )
            self._session = aiohttp.ClientSession(
                connector=connector, auto_decompress=False, cookie_jar=aiohttp.DummyCookieJar()
            )
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def post(
        self,
        webhook: Webhook,
        *,
        delivery_id: str,
        event_type: str,
        body: bytes,
        extra_headers: dict[str, str] | None = None,
    ) -> AttemptResult:
        started = time.perf_counter()
        refused = self._refusal(webhook.url)
        if refused is not None:
            return AttemptResult(error=f"target refused: {refused}", permanent=True)
        timestamp = int(time.time() * 1000)
        headers = {
            **webhook.headers,
            "Content-Type": "application/json",
            "User-Agent": USER_AGENT,
            "X-Webhook-Signature": signature(webhook.secret, timestamp, body),
            "X-Webhook-Timestamp": str(timestamp),
            "X-Webhook-Id": webhook.id,
            "X-Webhook-Delivery-Id": delivery_id,
            "X-Webhook-Event": event_type,
            **(extra_headers or {}),
        }
        cap = webhook.delivery_config.maxResponseBodyBytes
        timeout_s = webhook.delivery_config.timeoutMs / 1000
        try:
            async with asyncio.timeout(timeout_s):
                status, text = await self._send(webhook.url, headers, body, cap)
        except TimeoutError:
            return _failed(started, f"no answer within {webhook.delivery_config.timeoutMs} ms")
        except Exception as exc:  # any transport failure is one failed attempt
            refused = _refusal_inside(exc)
            if refused is not None:
                return _failed(started, f"target refused: {refused}", permanent=True)
            return _failed(started, _describe(exc))
        return AttemptResult(
            status_code=status, response_body=text, duration_ms=_elapsed_ms(started)
        )

    def _refusal(self, url: str) -> str | None:
        """Why this URL may not be posted to now (scheme, literal private address), or
        None; names are checked by the resolver. Cached per URL: the rules are fixed for
        the life of the process, and parsing costs more than the rest of an attempt."""
        if url in self._checked:
            return self._checked[url]
        try:
            target = parse_webhook_url(url, allow_http=self._allow_http)
            literal = ssrf.literal_address(target.host)
            reason = (
                ssrf.refusal(literal, allow_loopback=self._allow_loopback)
                if literal is not None
                else None
            )
        except ValueError as exc:
            reason = str(exc)
        if len(self._checked) >= _CHECKED_URLS:
            self._checked.clear()
        self._checked[url] = reason
        return reason

    async def _send(
        self, url: str, headers: dict[str, str], body: bytes, cap: int
    ) -> tuple[int, str]:
        session = await self._client()
        async with session.post(url, data=body, headers=headers, allow_redirects=False) as r:
            raw = bytearray()
            while len(raw) < cap:
                chunk = await r.content.read(cap - len(raw))
                if not chunk:
                    break
                raw += chunk
            # A receiver that sends more than we keep gets its connection closed, not drained.
            return r.status, bytes(raw[:cap]).decode("utf-8", errors="replace")


class _CheckingResolver:
    """aiohttp resolver: the checked addresses of a name, or a refusal."""

    def __init__(self, *, allow_loopback: bool) -> None:
        self._allow_loopback = allow_loopback

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[Any]:
        try:
            addresses = await ssrf.resolve_target(host, port, allow_loopback=self._allow_loopback)
        except ssrf.UnsafeTarget as exc:
            raise _TargetRefused(exc.message) from None
        return [
            {
                "hostname": host,
                "host": str(address),
                "port": port,
                "family": socket.AF_INET6 if address.version == 6 else socket.AF_INET,
                "proto": 0,
                "flags": socket.AI_NUMERICHOST,
            }
            for address in addresses
        ]

    async def close(self) -> None:
        return None


def _refusal_inside(exc: BaseException) -> str | None:
    seen: BaseException | None = exc
    for _ in range(5):  # aiohttp wraps the resolver's error once or twice
        if seen is None:
            return None
        if isinstance(seen, _TargetRefused):
            return seen.message
        seen = getattr(seen, "os_error", None) or seen.__cause__ or seen.__context__
    return None


def _describe(exc: BaseException) -> str:
    # The class name and aiohttp's text (host and port, never the path or query, which
    # may carry a receiver's token).
    text = str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {text}"[:300]


def _elapsed_ms(started: float) -> int:
    return int((time.perf_counter() - started) * 1000)


def _failed(started: float, error: str, *, permanent: bool = False) -> AttemptResult:
    return AttemptResult(duration_ms=_elapsed_ms(started), error=error, permanent=permanent)
