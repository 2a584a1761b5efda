"""A KNN query as FT.SEARCH takes it, and its reply as hits
(docs/features/vector-search.md#search)."""

import struct
from typing import Any

from svc_monitor.vector_search.schemas import SearchHit

# FT.SEARCH's alias for the distance each neighbour is at.
SCORE = "__knn_distance"
# struct formats of the vector types a list of floats can be packed as (little-endian, as
# the engines store them). BFLOAT16 has none: such a field is searched by sourceKey.
_FORMATS = {"FLOAT32": "f", "FLOAT64": "d", "FLOAT16": "e", "INT8": "b", "UINT8": "B"}


class CannotPack(ValueError):
    pass


def item_size(data_type: str | None) -> int | None:
    code = _FORMATS.get((data_type or "").upper())
    return None if code is None else struct.calcsize(code)


def pack(vector: list[float], data_type: str | None) -> bytes:
    """The blob the engine compares with: `vector` as the field's element type."""
    code = _FORMATS.get((data_type or "").upper())
    if code is None:
        raise CannotPack(f"a {data_type} field cannot be queried with floats; give sourceKey")
    values: list[Any] = [round(v) for v in vector] if code in "bB" else vector
    try:
        return struct.pack(f"<{len(values)}{code}", *values)
    except (struct.error, OverflowError) as exc:
        raise CannotPack(f"the vector does not fit {data_type}: {exc}") from None


def command(index: str, field: str, blob: bytes, *, k: int, filter: str) -> list[Any]:
    """FT.SEARCH of the `k` nearest to `blob` among the documents `filter` matches."""
    query = f"({filter})=>[KNN {k} @{field} $vec AS {SCORE}]"
    return [
        "FT.SEARCH", index, query,
        "PARAMS", "2", "vec", blob,
        "SORTBY", SCORE, "ASC",
        "LIMIT", "0", str(k),
        "DIALECT", "2",
        "TIMEOUT", "2000",
    ]  # fmt: skip


def hits(reply: Any, skip: set[str]) -> list[SearchHit]:
    """FT.SEARCH's [total, key, [name, value, ...], ...] as hits; the vector fields (`skip`)
    and any other binary value left out."""
    if not isinstance(reply, list) or not reply:
        return []
    found = []
    rest = reply[1:]
    for key, values in zip(rest[::2], rest[1::2], strict=False):
        fields: dict[str, str] = {}
        score: float | None = None
        if isinstance(values, list):
            for name, value in zip(values[::2], values[1::2], strict=False):
                text_name = _text(name)
                if text_name is None or text_name in skip:
                    continue
                text = _text(value)
                if text_name == SCORE:
                    score = _float(text)
                elif text is not None:
                    fields[text_name] = text
        found.append(SearchHit(key=_text(key) or "", score=score, fields=fields))
    return found


def _text(value: Any) -> str | None:
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return None  # a vector or another binary value
    return None if value is None else str(value)


def _float(text: str | None) -> float | None:
    try:
        return None if text is None else float(text)
    except ValueError:
        return None


def text_command(index: str, query: str, *, limit: int, offset: int) -> list[Any]:
    return [
        "FT.SEARCH", index, query,
        "LIMIT", str(offset), str(limit),
        "DIALECT", "2",
        "TIMEOUT", "2000",
    ]  # fmt: skip


def profile_command(index: str, query: str, *, limit: int) -> list[Any]:
    # LIMITED: the profile of each iterator without the document ids it walked.
    return [
        "FT.PROFILE", index, "SEARCH", "LIMITED", "QUERY", query,
        "LIMIT", "0", str(limit),
        "DIALECT", "2",
        "TIMEOUT", "2000",
    ]  # fmt: skip


def total(reply: Any) -> int:
    first = reply[0] if isinstance(reply, list) and reply else 0
    return first if isinstance(first, int) else 0


def readable(value: Any, depth: int = 0) -> Any:
    """FT.PROFILE's nested replies as JSON: a list of [name, value] pairs, or a flat list
    of names and values, as an object; bytes as text. Bounded in depth."""
    if depth > 12:
        return None
    if isinstance(value, bytes):
        return _text(value)
    if isinstance(value, dict):
        return {str(readable(k, depth + 1)): readable(v, depth + 1) for k, v in value.items()}
    if not isinstance(value, list):
        return value
    if value and all(
        isinstance(v, list) and len(v) == 2 and isinstance(v[0], bytes) for v in value
    ):
        return {_text(k) or "": readable(v, depth + 1) for k, v in value}
    if len(value) % 2 == 0 and value and all(isinstance(k, bytes) for k in value[::2]):
        names = [_text(k) for k in value[::2]]
        if all(n and not n[0].isdigit() for n in names):
            return {
                n or "": readable(v, depth + 1) for n, v in zip(names, value[1::2], strict=True)
            }
    return [readable(v, depth + 1) for v in value]
