"""What a tool is: a name, a typed input model, and a function of the REST API.

The server registers every `ToolSpec` of `catalog.TOOLS` the same way (mcp/server.py),
so a tool is a row and one small async function, never a copy of the plumbing.
"""

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from svc_monitor.mcp.api_caller import ApiCaller


class Scoped(BaseModel):
    """Every tool's input: which connection (name or id), the default one when omitted."""

    model_config = ConfigDict(extra="forbid")

    connection: str | None = Field(
        default=None,
        max_length=200,
        description="Connection name or id; the default connection when omitted",
    )


class Limited(Scoped):
    limit: int = Field(default=20, ge=1, le=200, description="Most entries to return")


ToolRun = Callable[[ApiCaller, Any], Awaitable[str]]


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    run: ToolRun
    params: type[Scoped] = Scoped
    # Changes something: an admin's tool; the REST API refuses it for anyone else.
    admin: bool = False
