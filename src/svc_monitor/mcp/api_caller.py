"""How every tool reaches the service: its own REST API, with the caller's credentials.

One interface (`ApiCaller`) for both transports: stdio talks HTTP to a running service
(SVC_URL, SVC_TOKEN), the /mcp endpoint runs the route in-process through the ASGI app
with the caller's Authorization header. Either way the REST API decides who may do what,
which licence tier a feature needs and what the answer is; nothing is decided twice.
"""

import re
from collections.abc import Mapping
from typing import Any

import httpx2

from svc_monitor.mcp.caller_protocol import ApiCaller, ServiceUnreachable, ToolRefused

CONNECTION_HEADER = "X-Connection-Id"
# Marks the request that carries out a tool call, so the REST API records it in the
# activity log under the caller (auth/dependencies/access.py); name look-ups go untagged.
TOOL_HEADER = "X-MCP-Tool"
TOOL_NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
__all__ = ["ApiCaller", "RestCaller", "ServiceUnreachable", "ToolRefused"]

# A refusal's message is the REST API's own; a proxy's HTML error page is cut short.
_MESSAGE_LIMIT = 500


class RestCaller:
    """An `ApiCaller` over an httpx2 client: a real base URL (stdio) or the app's ASGI
    transport (the /mcp endpoint). `tool` names the call it serves, for the activity log."""

    def __init__(
        self,
        client: httpx2.AsyncClient,
        *,
        tool: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self._client = client
        self._tool = tool if tool is not None and TOOL_NAME.match(tool) else None
        self._headers = {"Accept": "application/json", **(headers or {})}
        self._connection_ids: dict[str, str] = {}

    async def get(
        self,
        path: str,
        *,
        connection: str | None = None,
        params: Mapping[str, str] | None = None,
    ) -> Any:
        return await self._call("GET", path, connection=connection, params=params)

    async def send(
        self, method: str, path: str, *, connection: str | None = None, body: Any = None
    ) -> Any:
        return await self._call(method.upper(), path, connection=connection, body=body)

    async def _call(
        self,
        method: str,
        path: str,
        *,
        connection: str | None,
        params: Mapping[str, str] | None = None,
        body: Any = None,
    ) -> Any:
        headers = dict(self._headers)
        if connection:
            headers[CONNECTION_HEADER] = await self.connection_id(connection)
        if self._tool is not None:
            # One activity entry per tool call: the first request it makes carries the tag.
            headers[TOOL_HEADER], self._tool = self._tool, None
        response = await self._request(
            method, path, params=dict(params or {}), json=body, headers=headers
        )
        return _answer(response)

    async def _request(self, method: str, path: str, **options: Any) -> httpx2.Response:
        try:
            return await self._client.request(method, path, **options)
        except httpx2.RequestError as exc:
            raise ServiceUnreachable(_unreachable(self._client.base_url, exc)) from None

    async def connection_id(self, name_or_id: str) -> str:
        """The id of the connection called `name_or_id` (its name or its id)."""
        if name_or_id in self._connection_ids:
            return self._connection_ids[name_or_id]
        response = await self._request("GET", "/api/connections", headers=self._headers)
        listed = _answer(response)
        for entry in listed if isinstance(listed, list) else []:
            if name_or_id in (entry.get("id"), entry.get("name")):
                self._connection_ids[name_or_id] = str(entry["id"])
                return str(entry["id"])
        names = ", ".join(sorted(str(e.get("name")) for e in listed if isinstance(e, dict)))
        raise ToolRefused(
            f"connection: no connection is named or numbered {name_or_id!r}"
            f" (known: {names or 'none'})",
            404,
        )


def _unreachable(base_url: httpx2.URL, error: httpx2.RequestError) -> str:
    """Where and what, in words of our own: the error's own text may quote the request,
    its Authorization header included, so it is never passed on."""
    where = str(base_url.copy_with(username=None, password=None)).rstrip("/")
    if isinstance(error, httpx2.TimeoutException):
        what = "it did not answer in time"
    elif isinstance(error, httpx2.ConnectError):
        what = "nothing accepted the connection"
    elif isinstance(error, httpx2.RemoteProtocolError):
        what = "what answered does not speak HTTP"
    else:
        what = type(error).__name__
    return (
        f"svc-monitor at {where} could not be reached ({what}); check SVC_URL and that"
        " svc-monitor is running there"
    )


def _answer(response: httpx2.Response) -> Any:
    if response.status_code >= 400:
        raise ToolRefused(_message(response), response.status_code)
    if response.status_code == 204 or not response.content:
        return None
    if "json" not in response.headers.get("content-type", ""):
        return response.text
    return response.json()


def _message(response: httpx2.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:_MESSAGE_LIMIT] or response.reason_phrase
    message = body.get("message") if isinstance(body, dict) else None
    if isinstance(message, list):  # validation errors: one line per field
        message = "; ".join(str(m) for m in message)
    return str(message or body)[:_MESSAGE_LIMIT]
