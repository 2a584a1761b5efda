"""A webhook's custom headers: which are accepted, and which values are masked on display."""

import re

MAX_HEADERS = 20
MAX_NAME_LENGTH = 100
MAX_VALUE_LENGTH = 2048

# Why each header is refused; the reason is also the error message.
_SET_BY_SERVICE = "is set by the service on every delivery"
_FRAMING = "controls HTTP message framing or the connection, and a wrong value breaks delivery"
_RESTRICTED_REASONS: dict[str, str] = {
    # The receiver's name: the delivery connects to a pinned address and names the host here.
    "host": _SET_BY_SERVICE,
    # Both fixed on every delivery (docs/features/webhooks.md#delivery).
    "content-type": _SET_BY_SERVICE,  # application/json
    "user-agent": _SET_BY_SERVICE,  # Svc-Monitor/1.0
    "content-length": _FRAMING,
    "transfer-encoding": _FRAMING,
    "te": _FRAMING,
    "trailer": _FRAMING,
    "expect": _FRAMING,  # 100-continue would stall the request waiting for an interim reply
    "connection": _FRAMING,
    "keep-alive": _FRAMING,
    "upgrade": _FRAMING,
    "proxy-connection": _FRAMING,
    # The body is sent as is; a declared encoding would make receivers decode it and fail,
    # and the signature covers the bytes as sent.
    "content-encoding": _FRAMING,
}
# X-Webhook-* carry the signature, timestamp and ids (a copy would forge or confuse them);
# Proxy-* are read by proxies on the way, never by the receiver.
_RESTRICTED_PREFIXES: dict[str, str] = {
    "x-webhook-": "is reserved for the headers the service signs and sends",
    "proxy-": "is read by proxies, not by the receiver",
}
RESTRICTED_HEADERS: frozenset[str] = frozenset(_RESTRICTED_REASONS)

# RFC 9110 section 5.6.2: a field name is a token.
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
# Printable ASCII with inner spaces and tabs: what h11 sends, and what httpx can encode
# (it encodes header values as ASCII). No CR/LF/NUL, so no header injection.
_VALUE = re.compile(r"(?:[\x21-\x7e]+(?:[ \t]+[\x21-\x7e]+)*)?")

_SENSITIVE_NAMES = frozenset({"authorization", "proxy-authorization", "cookie"})
_SENSITIVE_PARTS = ("token", "secret", "key", "auth", "password", "signature", "cookie")


def check_custom_headers(headers: dict[str, str]) -> None:
    """ValueError naming the first header that may not be sent as given (never its value)."""
    if len(headers) > MAX_HEADERS:
        raise ValueError(f"at most {MAX_HEADERS} custom headers are allowed, got {len(headers)}")
    seen: set[str] = set()
    for name, value in headers.items():
        shown = ascii(name[:MAX_NAME_LENGTH])  # the name may itself be the bad input
        if len(name) > MAX_NAME_LENGTH:
            raise ValueError(f"header name {shown}... is longer than {MAX_NAME_LENGTH} characters")
        if not _TOKEN.fullmatch(name):
            raise ValueError(f"header name {shown} is not a valid HTTP header name")
        lower = name.lower()
        if lower in seen:
            raise ValueError(f"header {name} is given twice (names are case-insensitive)")
        seen.add(lower)
        reason = _restriction(lower)
        if reason is not None:
            raise ValueError(f"header {name} may not be set: it {reason}")
        if len(value) > MAX_VALUE_LENGTH:
            raise ValueError(f"the value of header {name} is longer than {MAX_VALUE_LENGTH}")
        if not _VALUE.fullmatch(value):
            raise ValueError(
                f"the value of header {name} may hold only printable ASCII characters, "
                "with no line breaks and no leading or trailing spaces"
            )


def is_sensitive_header(name: str) -> bool:
    """Whether a header's value is a credential, to be masked wherever it is shown."""
    lower = name.lower()
    return lower in _SENSITIVE_NAMES or any(part in lower for part in _SENSITIVE_PARTS)


def mask_value(value: str) -> str:
    """A secret as shown to users: up to a quarter of it, 4 characters at most, then `***`.

    The same rule as the webhook secret, so a user can tell two values apart without
    anyone learning enough of either to guess it.
    """
    return value[: min(4, len(value) // 4)] + "***"


def _restriction(lower: str) -> str | None:
    if lower in _RESTRICTED_REASONS:
        return _RESTRICTED_REASONS[lower]
    for prefix, reason in _RESTRICTED_PREFIXES.items():
        if lower.startswith(prefix):
            return reason
    return None
