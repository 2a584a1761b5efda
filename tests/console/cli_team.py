"""A served svc-monitor (real uvicorn, WebSockets on), people signed in over real HTTP,
and browser CLI sockets opened as each of them.

Sockets need a served app: httpx's ASGI transport cannot do WebSockets. Each person is
an httpx client against the served URL, sending the Origin our pages send; their session
cookie is passed to the socket's handshake as a browser would.
"""

import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import httpx
from fastapi import FastAPI
from websockets.asyncio.client import ClientConnection, connect
from websockets.typing import Origin

from svc_monitor.app import create_app
from svc_monitor.config import Settings
from tests.fixtures.app import serve_app
from tests.fixtures.workspace import PASSWORD


@dataclass
class Person:
    name: str
    role: str
    id: str
    client: httpx.AsyncClient
    cookie: str


@dataclass
class Cli:
    """One open CLI socket."""

    socket: ClientConnection

    async def run(self, command: str) -> dict[str, Any]:
        """Send one command; the server's answer to it."""
        await self.socket.send(json.dumps({"type": "execute", "command": command}))
        return await self.answer()

    async def answer(self) -> dict[str, Any]:
        frame: dict[str, Any] = json.loads(await self.socket.recv())
        return frame

    async def result(self, command: str) -> str:
        """The reply text of a command that must have run."""
        frame = await self.run(command)
        assert frame["type"] == "result", frame
        text: str = frame["result"]
        return text

    async def refusal(self, command: str) -> str:
        """The message of a command that must have been refused."""
        frame = await self.run(command)
        assert frame["type"] == "error", frame
        message: str = frame["error"]
        return message


@dataclass
class ServedTeam:
    app: FastAPI
    url: str
    owner: Person | None = None
    clients: list[httpx.AsyncClient] = field(default_factory=list)

    @property
    def cookie_name(self) -> str:
        name: str = self.app.state.services.auth.cookies.name
        return name

    def browser(self) -> httpx.AsyncClient:
        client = httpx.AsyncClient(base_url=self.url, headers={"Origin": self.url})
        self.clients.append(client)
        return client

    async def claim(self) -> Person:
        """Register the owner: the first account of a fresh workspace."""
        client = self.browser()
        registered = await client.post(
            "/api/auth/register",
            json={"email": "owner@example.com", "name": "Olive Owner", "password": PASSWORD},
        )
        assert registered.status_code == 201, registered.text
        self.owner = Person(
            "Olive Owner", "owner", registered.json()["id"], client, self._cookie_of(registered)
        )
        return self.owner

    async def aclose(self) -> None:
        for client in self.clients:
            await client.aclose()

    async def join(self, name: str, role: str = "member") -> Person:
        """Someone invited by the owner with `role`, who accepted and is signed in."""
        assert self.owner is not None
        email = f"{name.lower()}@example.com"
        invited = await self.owner.client.post(
            "/api/workspace/invitations", json={"email": email, "role": role}
        )
        assert invited.status_code == 201, invited.text
        token = invited.json()["link"].rsplit("/", 1)[1]
        client = self.browser()
        joined = await client.post(
            "/api/auth/accept-invite", json={"token": token, "name": name, "password": PASSWORD}
        )
        assert joined.status_code == 201, joined.text
        return Person(name, role, joined.json()["id"], client, self._cookie_of(joined))

    async def activity(self, person: Person) -> list[dict[str, Any]]:
        """The person's `cli.command` entries, newest first."""
        assert self.owner is not None
        response = await self.owner.client.get(
            "/api/workspace/activity", params={"action": "cli.command", "actor": person.id}
        )
        assert response.status_code == 200, response.text
        entries: list[dict[str, Any]] = response.json()["entries"]
        return entries

    def ws_url(self, connection_id: str | None = None) -> str:
        query = f"?connectionId={connection_id}" if connection_id is not None else ""
        return self.url.replace("http://", "ws://") + "/api/cli/ws" + query

    @contextlib.asynccontextmanager
    async def cli(
        self,
        person: Person | None,
        *,
        connection_id: str | None = None,
        origin: str | None = None,
        cookie: str | None = None,
        token: str | None = None,
    ) -> AsyncIterator[Cli]:
        """A CLI socket as `person` (None: no cookie), from our origin unless told; with
        `token`, as a script would: a bearer token, no cookie and no Origin."""
        value = cookie if cookie is not None else (person.cookie if person else None)
        headers = {"Cookie": f"{self.cookie_name}={value}"} if value else {}
        if token is not None:
            headers = {"Authorization": f"Bearer {token}"}
        async with connect(
            self.ws_url(connection_id),
            origin=None if token is not None else Origin(origin or self.url),
            additional_headers=headers,
            max_size=4 * 1024 * 1024,
            open_timeout=10,
            close_timeout=5,
        ) as socket:
            yield Cli(socket)

    def _cookie_of(self, response: httpx.Response) -> str:
        for header in response.headers.get_list("set-cookie"):
            name, _, rest = header.partition("=")
            if name == self.cookie_name:
                return rest.split(";", 1)[0]
        raise AssertionError(f"no session cookie in {response.headers}")


@contextlib.asynccontextmanager
async def served_team(settings: Settings) -> AsyncIterator[ServedTeam]:
    """The app for `settings` served on loopback; with user control on, an owner too."""
    app = create_app(settings)
    async with serve_app(app) as url:
        team = ServedTeam(app, url)
        try:
            if not settings.WORKSPACE_DISABLED:
                await team.claim()
            yield team
        finally:
            await team.aclose()
