"""The one interface the MCP tools reach the service through: its own REST API.

Both transports provide an `ApiCaller` (stdio over HTTP with SVC_TOKEN, /mcp in-process with
the caller's Bearer token), so the REST API alone decides access, licence tiers and answers.
"""

from collections.abc import Mapping
from typing import Any, Protocol


class ToolRefused(Exception):
    """The REST API answered with an error status; `message` is its own text (naming the
    field, the role or the tier needed)."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.message = message
        self.status = status

    def describe(self) -> str:
        """What the assistant reads: the REST API's message and its status."""
        return f"{self.message} (HTTP {self.status})"


class ServiceUnreachable(ToolRefused):
    """No HTTP answer came back at all (nothing listens at SVC_URL, a timeout, a broken
    proxy); `status` is 0 and `message` names the URL and what went wrong."""

    def __init__(self, message: str) -> None:
        super().__init__(message, 0)

    def describe(self) -> str:
        return self.message


class ApiCaller(Protocol):
    """`connection` is a connection's id or name; None means the default connection."""

    async def get(
        self,
        path: str,
        *,
        connection: str | None = None,
        params: Mapping[str, str] | None = None,
    ) -> Any: ...

    async def send(
        self, method: str, path: str, *, connection: str | None = None, body: Any = None
    ) -> Any: ...


def refusal(error: BaseException) -> tuple[int, str] | None:
    """The status and message of a REST refusal, whichever transport's caller raised it
    (each keeps `.status` and `.message`, as ToolRefused does); None for anything else."""
    status, message = getattr(error, "status", None), getattr(error, "message", None)
    if isinstance(status, int) and isinstance(message, str):
        return status, message
    return None
