"""Everything svc-monitor itself reads passes the agent: every metrics route of the API,
asked of an agent connection, sends only commands the agent runs (a command missing from
its list would show as a refusal here, and as a broken view for users)."""

from pathlib import Path
from typing import Any

import httpx
import pytest

from svc_monitor.app import create_app
from tests.agent.agent_process import AgentProcess
from tests.fixtures.app import make_settings, serve_app, target_of
from tests.fixtures.licensing import SigningKey
from tests.fixtures.servers import RunningServer, ServerFactory
from tests.fixtures.waiting import eventually

pytest_plugins = ["tests.fixtures.servers", "tests.fixtures.licensing"]
pytestmark = pytest.mark.timeout(120)


async def test_every_metrics_route_runs_through_the_agent_without_a_refusal(
    server_factory: ServerFactory,
    valkey_server: RunningServer,
    signing_key: SigningKey,
    tmp_path: Path,
) -> None:
    hidden = server_factory.start("valkey", config={"slowlog-log-slower-than": "0"})
    with hidden.client() as direct:
        for n in range(200):
            direct.set(f"user:{n}", "x" * n)
            direct.hset(f"session:{n}", mapping={"a": "1"})
    settings = make_settings(
        **target_of(valkey_server), SVC_OFFLINE_LICENSE=signing_key.mint(tier="enterprise")
    )
    app = create_app(settings)
    async with serve_app(app) as base, httpx.AsyncClient(base_url=base, timeout=30) as api:
        made = (await api.post("/api/agent-tokens", json={"name": "hidden"})).json()
        agent = AgentProcess(
            {
                "SVC_URL": base,
                "SVC_AGENT_ALLOW_HTTP": "true",
                "SVC_AGENT_TOKEN": made["token"],
                "DB_HOST": hidden.host,
                "DB_PORT": str(hidden.port),
            },
            tmp_path,
        ).start()
        try:
            headers = {"x-connection-id": made["connectionId"]}

            async def polled() -> bool:
                return (await api.get("/api/metrics/info", headers=headers)).status_code == 200

            await eventually(polled, within=20)
            document = (await api.get("/api/openapi.json")).json()
            routes = [
                path
                for path, operations in document["paths"].items()
                if path.startswith(("/api/metrics/", "/api/key-analytics/", "/api/vector-search/"))
                and "{" not in path
                and "get" in operations
            ]
            assert len(routes) > 20
            failed: dict[str, Any] = {}
            for path in routes:
                reply = await api.get(path, headers=headers)
                if reply.status_code >= 500 and reply.status_code != 501:  # 501: not on this engine
                    failed[path] = reply.text[:200]
            assert not failed
            agents = (await api.get("/api/agents")).json()
            assert agents[0]["refusedCommands"] == 0, (agents[0]["lastRefused"], agent.log)
        finally:
            agent.stop()
    assert "refused" not in agent.log
