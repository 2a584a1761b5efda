"""X-Webhook-Signature: how deliveries are signed, and how a receiver checks them.

The signed message is `"<X-Webhook-Timestamp>.<raw body>"` (Stripe's layout). Standard
Webhooks also signs the message id; ours does not, so a receiver deduplicates on
X-Webhook-Delivery-Id separately (docs/features/webhooks.md#signatures).
"""

import hashlib
import hmac

# The replay window receivers are told to keep: 5 minutes (docs/features/webhooks.md#signatures).
DEFAULT_TOLERANCE_MS = 300_000
# Longer than any epoch-millisecond value for the next few hundred million years; bounds
# the int() of a hostile header.
_MAX_TIMESTAMP_DIGITS = 16


def signature(secret: str | None, timestamp_ms: int, body: bytes) -> str:
    """Hex HMAC-SHA256 keyed by `secret` over `b"<timestamp_ms>." + body`.

    `body` must be the bytes as transmitted: re-serialised JSON would not match. Without a
    secret the key is empty: the header is on every delivery, but then anyone can compute
    it, so it proves nothing about the sender (docs/features/webhooks.md#signatures).
    """
    return _digest(secret.encode() if secret else b"", str(timestamp_ms), body)


def verify(
    secret: str,
    *,
    body: bytes,
    timestamp_header: str | None,
    signature_header: str | None,
    now_ms: int,
    tolerance_ms: int = DEFAULT_TOLERANCE_MS,
) -> bool:
    """Whether a delivery passes the receiver's check of docs/features/webhooks.md#signatures.

    Refuses a missing or non-numeric timestamp and one more than `tolerance_ms` older or
    newer than `now_ms` (a replay, or a clock far off), then compares in constant time.
    """
    if timestamp_header is None or signature_header is None:
        return False
    if not (
        timestamp_header.isascii()
        and timestamp_header.isdigit()
        and len(timestamp_header) <= _MAX_TIMESTAMP_DIGITS
    ):
        return False
    if abs(now_ms - int(timestamp_header)) > tolerance_ms:
        return False
    if not signature_header.isascii():  # compare_digest refuses non-ASCII str
        return False
    # The header text as received is what was signed (`<X-Webhook-Timestamp>.<raw body>`).
    expected = _digest(secret.encode(), timestamp_header, body)
    return hmac.compare_digest(expected, signature_header)


def _digest(key: bytes, timestamp: str, body: bytes) -> str:
    return hmac.new(key, f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
