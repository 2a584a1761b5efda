"""One agent, many instances: a targets file names each instance and its token, and the
agent keeps one link per instance."""

import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from svc_monitor.app import create_app
from tests.agent.agent_process import AgentProcess
from tests.fixtures.app import make_settings, serve_app, target_of
from tests.fixtures.servers import RunningServer, ServerFactory
from tests.fixtures.waiting import eventually

pytest_plugins = ["tests.fixtures.servers"]
pytestmark = pytest.mark.timeout(90)


async def test_one_agent_links_every_instance_of_its_targets_file(
    server_factory: ServerFactory, valkey_server: RunningServer, tmp_path: Path
) -> None:
    first, second = server_factory.start("valkey"), server_factory.start("redis7", password="pw-1")
    (tmp_path / "second.pw").write_text("pw-1\n")
    app = create_app(make_settings(**target_of(valkey_server)))
    async with serve_app(app) as base, httpx.AsyncClient(base_url=base, timeout=10) as api:
        a = (await api.post("/api/agent-tokens", json={"name": "a"})).json()
        b = (await api.post("/api/agent-tokens", json={"name": "b"})).json()
        (tmp_path / "a.token").write_text(a["token"])
        targets = tmp_path / "targets.yaml"
        targets.write_text(
            "targets:\n"
            f"  - tokenFile: {tmp_path / 'a.token'}\n"
            f"    host: {first.host}\n"
            f"    port: {first.port}\n"
            "  - tokenEnv: SECOND_TOKEN\n"
            f"    host: {second.host}\n"
            f"    port: {second.port}\n"
            f"    passwordFile: {tmp_path / 'second.pw'}\n"
        )
        env = {
            "SVC_URL": base,
            "SVC_AGENT_ALLOW_HTTP": "true",
            "SVC_AGENT_TARGETS_FILE": str(targets),
            "SECOND_TOKEN": b["token"],
        }
        agent = AgentProcess(env, tmp_path).start()
        try:

            async def both_linked() -> bool:
                agents = (await api.get("/api/agents")).json()
                return len(agents) == 2 and all(x["rttMs"] is not None for x in agents)

            await eventually(both_linked, within=20)
            engines = {x["name"]: x["engine"] for x in (await api.get("/api/agents")).json()}
            assert engines == {"a": "valkey", "b": "redis"}
            for made, port in ((a, first.port), (b, second.port)):
                headers = {"x-connection-id": made["connectionId"]}

                async def polled(headers: dict[str, str] = headers) -> bool:
                    info = await api.get("/api/metrics/info", headers=headers)
                    return info.status_code == 200

                await eventually(polled, within=20)
                info = (await api.get("/api/metrics/info", headers=headers)).json()
                assert int(info["sections"]["server"]["tcp_port"]) == port
        finally:
            agent.stop()
    assert "pw-1" not in agent.log
    assert a["token"] not in agent.log


@pytest.mark.parametrize(
    ("content", "named"),
    [
        ({"targets": [{"host": "10.0.0.1", "tokenEnv": "T", "tokenFile": "/x"}]}, "targets.0"),
        ({"targets": [{"host": "10.0.0.1", "tokenEnv": "T", "password": "inline"}]}, "password"),
        ({"targets": []}, "targets"),
        ({"targets": [{"host": "10.0.0.1", "tokenEnv": "NOT_SET_ANYWHERE"}]}, "NOT_SET_ANYWHERE"),
    ],
)
def test_a_bad_targets_file_ends_the_agent_naming_the_field(
    tmp_path: Path, content: object, named: str
) -> None:
    targets = tmp_path / "targets.json"
    targets.write_text(json.dumps(content))
    done = subprocess.run(
        [sys.executable, "-m", "svc_monitor", "agent"],
        env={
            "PATH": "/usr/bin:/bin",
            "SVC_URL": "https://svc.example",
            "SVC_AGENT_TARGETS_FILE": str(targets),
        },
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2, done.stderr
    assert named in done.stderr
    assert "Traceback" not in done.stderr
    assert "inline" not in done.stderr
