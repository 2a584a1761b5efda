"""An ApiCaller over real HTTP (httpx) against a served app, acting as a user's personal
token, for testing the MCP tools' logic the way a transport drives it."""

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import httpx
from fastapi import FastAPI

from svc_monitor.app import create_app
from svc_monitor.config import Settings
from svc_monitor.mcp.caller_protocol import ToolRefused
from tests.fixtures.app import make_settings, serve_app, target_of
from tests.fixtures.servers import RunningServer

CONNECTION_HEADER = "X-Connection-Id"


class HttpApiCaller:
    def __init__(self, client: httpx.AsyncClient) -> None:
        self._client = client

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
        return await self._call(method, path, connection=connection, body=body)

    async def _call(
        self,
        method: str,
        path: str,
        *,
        connection: str | None,
        params: Mapping[str, str] | None = None,
        body: Any = None,
    ) -> Any:
        headers = {CONNECTION_HEADER: connection} if connection else {}
        response = await self._client.request(
            method, path, params=dict(params or {}), json=body, headers=headers
        )
        if response.status_code >= 400:
            try:
                message = str(response.json().get("message"))
            except ValueError:
                message = response.text
            raise ToolRefused(f"{response.status_code}: {message}", response.status_code)
        return response.json() if response.content else None


@asynccontextmanager
async def token_caller(base_url: str, token: str) -> AsyncIterator[HttpApiCaller]:
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=base_url, headers=headers, timeout=30) as client:
        yield HttpApiCaller(client)


OWNER = {"email": "owner@example.com", "name": "Olive Owner", "password": "correct horse battery"}


@asynccontextmanager
async def served_as_owner(
    settings: Settings, *, app: FastAPI | None = None
) -> AsyncIterator[HttpApiCaller]:
    """The app (built from `settings` unless given) served over real HTTP with user control
    on, and a caller acting as its owner's personal token (created the way a user does,
    under their session)."""
    app = app if app is not None else create_app(settings)
    async with serve_app(app) as base_url:
        async with httpx.AsyncClient(
            base_url=base_url, headers={"Origin": base_url}, timeout=30
        ) as browser:
            registered = await browser.post("/api/auth/register", json=OWNER)
            assert registered.status_code == 201, registered.text
            created = await browser.post("/api/tokens", json={"name": "assistant"})
            assert created.status_code == 201, created.text
            token = created.json()["token"]
        async with token_caller(base_url, token) as caller:
            yield caller


def served_settings(server: RunningServer, **overrides: Any) -> Settings:
    return make_settings(**{**target_of(server), "WORKSPACE_DISABLED": False, **overrides})
