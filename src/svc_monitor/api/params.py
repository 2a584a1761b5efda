"""Query parameters shared by every history route, so they read the same everywhere."""

from typing import Annotated

from fastapi import Query

From = Annotated[int | None, Query(alias="from", ge=0, description="epoch ms, inclusive")]
To = Annotated[int | None, Query(alias="to", ge=0, description="epoch ms, inclusive")]
Limit = Annotated[int, Query(ge=1, le=10_000, description="at most this many rows")]
Offset = Annotated[int, Query(ge=0, description="rows to skip")]
