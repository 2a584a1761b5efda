"""A cluster behind one agent: the agent reaches the nodes its instance reports, and the
service watches each of them through it."""

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest

from svc_monitor.app import create_app
from tests.agent.agent_process import AgentProcess
from tests.fixtures.app import make_settings, serve_app, target_of
from tests.fixtures.servers import RunningServer, ServerFactory
from tests.fixtures.waiting import eventually

pytest_plugins = ["tests.fixtures.servers"]
pytestmark = pytest.mark.timeout(120)


async def test_every_node_of_a_cluster_is_polled_through_one_agent(
    server_factory: ServerFactory, valkey_server: RunningServer, tmp_path: Path
) -> None:
    nodes = server_factory.cluster(masters=3)
    app = create_app(make_settings(**target_of(valkey_server)))
    async with serve_app(app) as base, httpx.AsyncClient(base_url=base, timeout=10) as api:
        made = (await api.post("/api/agent-tokens", json={"name": "cluster"})).json()
        cid = made["connectionId"]
        agent = AgentProcess(
            {
                "SVC_URL": base,
                "SVC_AGENT_ALLOW_HTTP": "true",
                "SVC_AGENT_TOKEN": made["token"],
                "DB_HOST": nodes[0].host,
                "DB_PORT": str(nodes[0].port),
            },
            tmp_path,
        ).start()
        try:

            async def linked() -> bool:
                agents = (await api.get("/api/agents")).json()
                return any(a["linked"] for a in agents)

            await eventually(linked, within=20)
            shown = (await api.get("/api/agents")).json()[0]
            assert shown["cluster"] is True
            others = {f"{n.host}:{n.port}" for n in nodes[1:]}
            assert others <= set(shown["nodes"]), shown
            headers = {"x-connection-id": cid}

            async def every_node_up() -> bool:
                reply = await api.get("/api/metrics/cluster/node-stats", headers=headers)
                if reply.status_code != 200:
                    return False
                rows: list[dict[str, Any]] = reply.json()
                return len(rows) == 3 and all(r["status"] == "up" for r in rows)

            await eventually(every_node_up, within=30)
            rows = (await api.get("/api/metrics/cluster/node-stats", headers=headers)).json()
            assert {r["address"] for r in rows} >= others
            assert all(r["usedMemory"] and r["version"].startswith("9.") for r in rows)
            assert sum(r["slots"] for r in rows) == 16384
            # Reached through the agent, not dialled by the service (which is on the same
            # host here): every node's clients are the agent's.
            for node in nodes:
                with node.client() as direct:
                    names = {c["name"] for c in direct.client_list()}
                assert "svc-monitor-agent" in names, (node.port, names)
                assert "svc-monitor" not in names, (node.port, names)
        finally:
            agent.stop()
        await asyncio.sleep(0)
    assert "refused a session" not in agent.log
