"""Query parameters shared by every history route, so they read the same everywhere."""

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Query

From = Annotated[int | None, Query(alias="from", ge=0, description="epoch ms, inclusive")]
To = Annotated[int | None, Query(alias="to", ge=0, description="epoch ms, inclusive")]
Limit = Annotated[int, Query(ge=1, le=10_000, description="at most this many rows")]
Offset = Annotated[int, Query(ge=0, description="rows to skip")]


@dataclass(frozen=True, slots=True)
class WindowPage:
    """A page of the rows captured in a time window: what a history list route reads."""

    since: From = None
    until: To = None
    limit: Limit = 100
    offset: Offset = 0


# `from`, `to`, `limit` and `offset` as one parameter (`page: HistoryPage`), in that order.
HistoryPage = Annotated[WindowPage, Depends()]
