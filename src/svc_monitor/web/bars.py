"""Distributions drawn by the templates as SVG bar charts: one bar per bucket."""

from dataclasses import dataclass
from typing import Generic, TypeVar

BoundT = TypeVar("BoundT")


@dataclass(frozen=True, slots=True)
class Bar(Generic[BoundT]):
    """One bucket drawn as a bar; `x` and `height` in px."""

    x: int
    height: int
    bound: BoundT  # the bucket's upper bound, as its page labels it
    count: int  # what fell in the bucket: keys, calls
