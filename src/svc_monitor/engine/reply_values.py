"""Reading the items of a RESP reply from a server we do not control: text, integers and
flat key/value lists, leniently (a malformed item reads as None or is skipped, never
raised on). Shared by the reply parsers and the detectors that read raw replies."""

from collections.abc import Iterator
from typing import Any


def text(value: Any) -> str:
    """A reply item as text: bytes decoded leniently (keys and values are binary-safe on
    the server; a bad byte must not lose the entry), anything else through str()."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def integer(value: Any) -> int | None:
    """A reply item as an int when it is one (or its decimal text); else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, bytes | str):
        try:
            return int(value)
        except ValueError:
            return None
    return None


def pairs(items: Any) -> Iterator[tuple[str, Any]]:
    """A flat `[key, value, key, value ...]` reply as (key text, value) pairs."""
    if not isinstance(items, list):
        return
    for index in range(0, len(items) - 1, 2):
        yield text(items[index]), items[index + 1]
