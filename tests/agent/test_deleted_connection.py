"""Deleting an agent connection closes its agent's link and refuses its token."""

from pathlib import Path

import httpx
import pytest

from svc_monitor.app import create_app
from tests.agent.agent_process import AgentProcess
from tests.fixtures.app import make_settings, serve_app, target_of
from tests.fixtures.servers import RunningServer
from tests.fixtures.waiting import eventually

pytest_plugins = ["tests.fixtures.servers"]
pytestmark = pytest.mark.timeout(60)


async def test_deleting_the_connection_closes_the_link(
    valkey_server: RunningServer, tmp_path: Path
) -> None:
    app = create_app(make_settings(**target_of(valkey_server)))
    async with serve_app(app) as base, httpx.AsyncClient(base_url=base, timeout=10) as api:
        made = (await api.post("/api/agent-tokens", json={"name": "short-lived"})).json()
        agent = AgentProcess(
            {
                "SVC_URL": base,
                "SVC_AGENT_ALLOW_HTTP": "true",
                "SVC_AGENT_TOKEN": made["token"],
                "DB_HOST": valkey_server.host,
                "DB_PORT": str(valkey_server.port),
            },
            tmp_path,
        ).start()
        try:

            async def linked() -> bool:
                return bool((await api.get("/api/agents")).json()[0]["linked"])

            await eventually(linked, within=20)
            gone = await api.delete(f"/api/connections/{made['connectionId']}")
            assert gone.status_code == 204

            async def closed() -> bool:
                return "4004" in agent.log

            await eventually(closed, within=5)
            [token] = (await api.get("/api/agent-tokens")).json()
            assert token["revokedAt"] is not None
            assert not (await api.get("/api/agents")).json()[0]["linked"]
        finally:
            agent.stop()
