"""Query parameters shared by every history route, so they read the same everywhere, and
the bounds every numeric parameter has.

Every integer a request carries is bounded, so none reaches storage past what it keeps
(PostgreSQL's BIGINT, SQLite's 64-bit INTEGER) and raises there: a time after the year
9999 is not a time, and no count, offset or id comes near 2**63.
"""

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Query

MAX_EPOCH_MS = 253_402_300_799_999  # 9999-12-31T23:59:59.999Z
MAX_COUNT = 2**31 - 1  # rows, offsets, occurrences, seconds, ids
MAX_BYTES = 2**63 - 1

From = Annotated[
    int | None, Query(alias="from", ge=0, le=MAX_EPOCH_MS, description="epoch ms, inclusive")
]
To = Annotated[
    int | None, Query(alias="to", ge=0, le=MAX_EPOCH_MS, description="epoch ms, inclusive")
]
Limit = Annotated[int, Query(ge=1, le=10_000, description="at most this many rows")]
Offset = Annotated[int, Query(ge=0, le=MAX_COUNT, description="rows to skip")]


@dataclass(frozen=True, slots=True)
class WindowPage:
    """A page of the rows captured in a time window: what a history list route reads."""

    since: From = None
    until: To = None
    limit: Limit = 100
    offset: Offset = 0


# `from`, `to`, `limit` and `offset` as one parameter (`page: HistoryPage`), in that order.
HistoryPage = Annotated[WindowPage, Depends()]
