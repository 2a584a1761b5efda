"""Helpers shared by the MONITOR capture tests: traffic, waiting for a capture to end."""

import asyncio
import contextlib
import json
import random
import string
from collections.abc import AsyncIterator
from typing import Any

import httpx
import valkey.asyncio as avalkey
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosedError
from websockets.typing import Origin

from tests.fixtures.servers import RunningServer
from tests.fixtures.waiting import eventually


def tag() -> str:
    """A key prefix no other test uses."""
    return "mon" + "".join(random.choices(string.ascii_lowercase, k=10))


def traffic_client(server: RunningServer, **kw: Any) -> avalkey.Valkey:
    """An asyncio client: traffic sent while the app runs in the same loop must not block it."""
    return avalkey.Valkey(
        host=server.host,
        port=server.port,
        password=server.password,
        decode_responses=True,
        lib_name=None,
        lib_version=None,
        **kw,
    )


async def send(client: avalkey.Valkey, *command: str | int | bytes) -> Any:
    """One command on a traffic client (valkey-py's asyncio stubs type replies loosely)."""
    return await client.execute_command(*command)  # type: ignore[no-untyped-call]


async def start(client: httpx.AsyncClient, **body: Any) -> dict[str, Any]:
    response = await client.post("/api/monitor/sessions", json=body)
    assert response.status_code == 201, response.text
    session: dict[str, Any] = response.json()
    assert session["status"] == "running"
    return session


async def ended(
    client: httpx.AsyncClient, session_id: int, *, within: float = 15.0
) -> dict[str, Any]:
    """The capture once it is no longer running."""
    found: dict[str, Any] = {}

    async def done() -> bool:
        response = await client.get(f"/api/monitor/sessions/{session_id}")
        assert response.status_code == 200, response.text
        found.update(response.json())
        return bool(found["status"] != "running")

    await eventually(done, within=within, every=0.1)
    return found


async def all_lines(client: httpx.AsyncClient, session_id: int) -> list[dict[str, Any]]:
    lines: list[dict[str, Any]] = []
    while True:
        response = await client.get(
            f"/api/monitor/sessions/{session_id}/lines",
            params={"offset": len(lines), "limit": 5000},
        )
        assert response.status_code == 200, response.text
        page = response.json()
        if not page:
            return lines
        lines.extend(page)


def tagged(lines: list[dict[str, Any]], prefix: str) -> list[dict[str, Any]]:
    return [line for line in lines if line["args"] and line["args"][0].startswith(prefix)]


@contextlib.asynccontextmanager
async def tail_socket(
    url: str,
    session_id: int | str,
    *,
    cookie: tuple[str, str] | None = None,
    origin: str | None = None,
) -> AsyncIterator[ClientConnection]:
    """The live tail of a capture on a served app, as a browser on `origin` (default: the
    app's own) with the session `cookie` (name, value) opens it."""
    headers = {"Cookie": f"{cookie[0]}={cookie[1]}"} if cookie else {}
    async with connect(
        url.replace("http://", "ws://") + f"/api/monitor/ws?sessionId={session_id}",
        origin=Origin(origin or url),
        additional_headers=headers,
        open_timeout=10,
        close_timeout=5,
    ) as socket:
        yield socket


async def frames(socket: ClientConnection, *, within: float = 15.0) -> list[dict[str, Any]]:
    """Every frame until the server closes the socket."""
    received: list[dict[str, Any]] = []
    # A close other than 1000 ends the iteration with ConnectionClosedError: the frames
    # before it are the point (socket.close_code says how it closed).
    with contextlib.suppress(ConnectionClosedError):
        async with asyncio.timeout(within):
            async for message in socket:
                received.append(json.loads(message))
    return received


def tail_lines(received: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [line for frame in received if frame["type"] == "lines" for line in frame["lines"]]
