"""One record built from another that holds the same values under the same names.

A stored row or a parsed reply carries its values as snake_case attributes; the response
body made of it names the same values in camelCase (`usedMemoryRss` is `used_memory_rss`),
and a frozen record in snake_case. Spelling out each field in each direction would repeat
every list of columns once more, so the fields whose names line up are copied here and the
call names only those that differ.
"""

import dataclasses
from typing import Any, TypeVar

from pydantic import BaseModel
from pydantic.alias_generators import to_snake

T = TypeVar("T")
_Sources = tuple[tuple[str, str], ...]

# Each class's pairs, worked out once: to_snake is a few regular expressions per name, and
# a page of rows asks for every row.
_SOURCES: dict[type[Any], _Sources] = {}


def _sources(cls: type[Any]) -> _Sources:
    """(field, the attribute of a source it is read from) for each field `cls` takes."""
    found = _SOURCES.get(cls)
    if found is None:
        found = _SOURCES[cls] = tuple((name, to_snake(name)) for name in _fields(cls))
    return found


def _fields(cls: type[Any]) -> list[str]:
    if issubclass(cls, BaseModel):
        return list(cls.model_fields)
    if dataclasses.is_dataclass(cls):
        return [f.name for f in dataclasses.fields(cls) if f.init]
    raise TypeError(f"{cls.__name__} is neither a pydantic model nor a dataclass")


def from_attributes(cls: type[T], source: object, /, **given: Any) -> T:
    """`cls` (a pydantic model or a dataclass) with the `given` fields, and each other field
    read from the attribute of `source` named as it is in snake_case."""
    values = {
        name: getattr(source, attribute) for name, attribute in _sources(cls) if name not in given
    }
    return cls(**values, **given)
