"""A list of HTTP headers as the OpenTelemetry exporter variables write it:
`key1=value1,key2=value2`, values percent-encoded (`Authorization=Bearer%20abc`)."""

from urllib.parse import unquote


def parse_headers(text: str) -> dict[str, str]:
    """`k1=v1,k2=v2` (values percent-decoded); ValueError naming the entry's position
    and key only, never a value."""
    headers: dict[str, str] = {}
    for position, entry in enumerate(text.split(","), start=1):
        if not entry.strip():
            continue
        key, sep, value = entry.partition("=")
        key = key.strip()
        if not sep or not key or not key.isascii() or any(c in key for c in " \t:\r\n"):
            raise ValueError(f"entry {position} is not key=value")
        decoded = unquote(value.strip())
        if any(c in decoded for c in "\r\n\0"):
            raise ValueError(f"entry {position} ({key}) holds a line break or NUL")
        headers[key] = decoded
    return headers
