"""The tools' ApiCaller over real HTTP against a served app, acting as a user's personal
token, for testing the MCP tools' logic the way a transport drives it."""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import httpx2
from fastapi import FastAPI

from svc_monitor.app import create_app
from svc_monitor.config import Settings
from svc_monitor.mcp.api_caller import RestCaller
from tests.fixtures.app import make_settings, serve_app, target_of
from tests.fixtures.servers import RunningServer

# The tools' own caller, here over real HTTP as `svc-monitor mcp` uses it.
HttpApiCaller = RestCaller


@asynccontextmanager
async def token_caller(base_url: str, token: str) -> AsyncIterator[HttpApiCaller]:
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx2.AsyncClient(base_url=base_url, timeout=30) as client:
        yield RestCaller(client, headers=headers)


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
