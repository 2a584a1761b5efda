"""Key names to key patterns, and key sizes to buckets: pure functions.

The pattern rule: a key is split into segments at the separators `:` `.` `_` `/` `-`
(kept as they were, so `user:42` reads `user:*` and `cache.v2.99` reads `cache.v2.*`),
after every UUID in it has become `*` (a UUID holds `-`, which would otherwise split it).
A segment becomes `*` when it is variable:

- all digits (`42`, `1700000000`);
- hexadecimal, at least 8 characters and holding a digit (`5f1d7a9c`, a Mongo-style
  24-character id, a SHA): 8 keeps short words of hex letters such as `cafe` or `feed`;
- at least 16 letters and digits mixing both (a base62 token or session id).

Anything else is a name and stays. A key longer than MAX_PATTERN_CHARS is cut there and
ends in `…`: the pattern is a label in a table and a Prometheus series, not the key.
"""

import re

from svc_monitor.key_analytics.models import BUCKET_BOUNDS, OVER_LAST

MAX_PATTERN_CHARS = 200
UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_SEPARATORS = re.compile(r"([:._/-])")
_HEX_ID = re.compile(r"(?=[^0-9]*[0-9])[0-9a-fA-F]{8,}")
_TOKEN = re.compile(r"(?=[^0-9]*[0-9])(?=[^a-zA-Z]*[a-zA-Z])[0-9a-zA-Z]{16,}")


def pattern_of(key: bytes) -> str:
    """The key's pattern by the module's rule."""
    text = key.decode("utf-8", errors="backslashreplace")
    text = UUID.sub("*", text)
    parts = _SEPARATORS.split(text)
    # Even indexes are segments, odd ones the separators between them.
    for i in range(0, len(parts), 2):
        if _variable(parts[i]):
            parts[i] = "*"
    pattern = "".join(parts)
    if len(pattern) > MAX_PATTERN_CHARS:
        pattern = pattern[:MAX_PATTERN_CHARS] + "…"
    return pattern


def _variable(segment: str) -> bool:
    if not segment:
        return False
    return (
        segment.isdigit()
        or _HEX_ID.fullmatch(segment) is not None
        or _TOKEN.fullmatch(segment) is not None
    )


def bucket_of(size: int) -> str:
    """The bucket a size in bytes falls in: its upper bound ("64" .. "1048576", "+Inf")."""
    for bound in BUCKET_BOUNDS:
        if size <= bound:
            return str(bound)
    return OVER_LAST
