"""FT.INFO replies read into one shape, whichever search engine answered.

RediSearch (the module, and Redis 8's built-in search) answers FT.INFO with a flat list of
names and values in RESP2 (a map in RESP3): counts as integers, sizes as decimal strings
in megabytes, each attribute as a flat list of its own. Valkey Search answers with the
same counts under mostly the same names, its progress as `backfill_complete_percent` and
`backfill_in_progress`, each attribute's vector details nested under `index`, and no
per-index sizes. Both spellings are read here (docs/features/vector-search.md says which
were checked against a real server); a field neither has is None, never 0.
"""

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

_MB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class VectorField:
    """One vector attribute of an index, as FT.INFO describes it."""

    name: str
    algorithm: str | None  # HNSW, FLAT, SVS-VAMANA
    data_type: str | None  # FLOAT32, FLOAT64, ...
    dimensions: int | None
    distance_metric: str | None  # COSINE, L2, IP


@dataclass(frozen=True, slots=True)
class SearchIndexInfo:
    """What one FT.INFO says of one index."""

    name: str
    docs: int | None
    records: int | None
    indexing_failures: int | None
    percent_indexed: float | None  # 0 to 100
    indexing: bool | None  # a backfill (the scan of existing keys) is running
    memory_bytes: int | None  # the index as a whole, its vector indexes included
    vector_memory_bytes: int | None
    vector_fields: tuple[VectorField, ...]
    last_error: str | None  # the newest indexing error the engine kept, if any
    # The cluster node it was read from (host:port); None for the connection's own server.
    node: str | None = None


def parse_ft_list(reply: Any) -> list[str]:
    """FT._LIST's index names (a list in RESP2, a set in RESP3)."""
    if not isinstance(reply, list | set | tuple):
        return []
    return sorted(_text(name) for name in reply if name is not None)


def parse_ft_info(name: str, reply: Any) -> SearchIndexInfo:
    """One FT.INFO reply as SearchIndexInfo; `name` is the index asked about."""
    fields = _as_map(reply)
    vector_mb = _number(fields.get("vector_index_sz_mb"))
    total_mb = _number(fields.get("total_index_memory_sz_mb"))
    if total_mb is None:
        parts = [
            _number(fields.get(key))
            for key in (
                "inverted_sz_mb",
                "offset_vectors_sz_mb",
                "doc_table_size_mb",
                "key_table_size_mb",
                "sortable_values_size_mb",
            )
        ]
        known = [p for p in parts if p is not None]
        total_mb = sum(known) if known else None
    # RediSearch's total leaves the vector indexes out (checked on 2.10: 0.03 MB total
    # beside a 0.24 MB HNSW graph), and they are most of an AI workload's index.
    memory_mb = (
        None if total_mb is None and vector_mb is None else (total_mb or 0) + (vector_mb or 0)
    )
    progress = _number(fields.get("percent_indexed"))
    if progress is None:
        progress = _number(fields.get("backfill_complete_percent"))
    indexing = _flag(fields.get("indexing"))
    if indexing is None:
        indexing = _flag(fields.get("backfill_in_progress"))
    if indexing is None and "state" in fields:
        indexing = _text(fields["state"]).lower() != "ready"
    return SearchIndexInfo(
        name=name,
        docs=_integer(fields.get("num_docs")),
        records=_integer(fields.get("num_records")),
        indexing_failures=_integer(fields.get("hash_indexing_failures")),
        # Both engines answer a fraction (1 when done); shown as a percentage.
        percent_indexed=None if progress is None else round(min(max(progress, 0.0), 1.0) * 100, 4),
        indexing=indexing,
        memory_bytes=None if memory_mb is None else round(memory_mb * _MB),
        vector_memory_bytes=None if vector_mb is None else round(vector_mb * _MB),
        vector_fields=tuple(_vector_fields(fields.get("attributes"))),
        last_error=_last_error(fields),
    )


def _vector_fields(attributes: Any) -> list[VectorField]:
    if not isinstance(attributes, list):
        return []
    found = []
    for attribute in attributes:
        a = _as_map(attribute)
        nested = _as_map(a.get("index"))  # Valkey Search
        kind = _text(a.get("type", "")).upper()
        if kind != "VECTOR" and not nested:
            continue
        algorithm = a.get("algorithm", nested.get("algorithm"))
        if isinstance(algorithm, list | dict):
            algorithm = _as_map(algorithm).get("name")
        name = a.get("identifier", a.get("attribute"))
        found.append(
            VectorField(
                name=_text(name) if name is not None else "",
                algorithm=_optional_text(algorithm),
                data_type=_optional_text(a.get("data_type", nested.get("data_type"))),
                dimensions=_integer(a.get("dim", nested.get("dimensions"))),
                distance_metric=_optional_text(
                    a.get("distance_metric", nested.get("distance_metric"))
                ),
            )
        )
    return found


def _last_error(fields: Mapping[str, Any]) -> str | None:
    errors = _as_map(fields.get("Index Errors"))
    message = errors.get("last indexing error")
    if message is None:
        return None
    text = _text(message)
    return None if text in ("", "N/A") else text[:1024]


def _as_map(value: Any) -> dict[str, Any]:
    """A RESP3 map as it is; a RESP2 flat list of names and values as a dict."""
    if isinstance(value, Mapping):
        return {_text(k): v for k, v in value.items()}
    if isinstance(value, list) and len(value) % 2 == 0:
        pairs = zip(value[::2], value[1::2], strict=True)
        return {_text(k): v for k, v in pairs if isinstance(k, str | bytes)}
    return {}


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def _optional_text(value: Any) -> str | None:
    return None if value is None or isinstance(value, list | dict) else _text(value)


def _number(value: Any) -> float | None:
    """A finite number from an integer, a double or a decimal string; else None."""
    if value is None or isinstance(value, bool | list | dict):
        return None
    try:
        number = float(_text(value))
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def _integer(value: Any) -> int | None:
    number = _number(value)
    return None if number is None or number < 0 else int(number)


def _flag(value: Any) -> bool | None:
    number = _number(value)
    return None if number is None else number != 0
