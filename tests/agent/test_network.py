"""An instance the service cannot reach, watched through an agent that can: three hosts on
their own networks (network namespaces made by the test), real Valkey, a real agent
process dialling the service over HTTPS with a verified certificate."""

import asyncio
import contextlib
import json
import ssl
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import trustme
import uvicorn
import websockets

from svc_monitor.app import create_app
from svc_monitor.console.socket_protocol import LAZY_WS
from tests.agent.agent_process import AgentProcess
from tests.fixtures.app import free_port, make_settings, target_of
from tests.fixtures.netns import Hosts, in_namespace, needs_netns, three_hosts
from tests.fixtures.receiver import Receiver
from tests.fixtures.servers import RunningServer, binary_path
from tests.fixtures.waiting import eventually

pytest_plugins = ["tests.fixtures.servers", "tests.fixtures.receiver"]
pytestmark = [needs_netns, pytest.mark.timeout(180)]

DB_PORT = 6390


@dataclass
class Stage:
    hosts: Hosts
    base: str
    client: httpx.AsyncClient
    ca_path: Path
    workdir: Path

    def agent(self, token_file: Path) -> AgentProcess:
        env = {
            "SVC_URL": self.base,
            "SVC_CA_BUNDLE": str(self.ca_path),
            "SVC_AGENT_TOKEN_FILE": str(token_file),
            "DB_HOST": self.hosts.db_ip,
            "DB_PORT": str(DB_PORT),
        }
        return AgentProcess(env, self.workdir, namespace=self.hosts.agent_ns)


def _reachable(ns: str, host: str, port: int) -> bool:
    probe = f"import socket; socket.create_connection(({host!r}, {port}), timeout=1).close()"
    done = subprocess.run(in_namespace(ns, [sys.executable, "-c", probe]), capture_output=True)
    return done.returncode == 0


def hidden_valkey(hosts: Hosts, workdir: Path) -> "subprocess.Popen[bytes]":
    """Valkey on the database's host, answering once the agent's host can reach it."""
    valkey = subprocess.Popen(
        in_namespace(
            hosts.db_ns,
            [
                str(binary_path("valkey")),
                "--bind", hosts.db_ip, "--port", str(DB_PORT), "--save", "",
                "--appendonly", "no", "--protected-mode", "no",
                "--slowlog-log-slower-than", "0", "--dir", str(workdir),
            ],
        ),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    for _ in range(100):  # bounded: 10 s
        if _reachable(hosts.agent_ns, hosts.db_ip, DB_PORT):
            break
        time.sleep(0.1)
    return valkey


@contextlib.asynccontextmanager
async def stage(valkey_server: RunningServer, tmp_path: Path) -> AsyncIterator[Stage]:
    with three_hosts() as hosts:
        valkey = hidden_valkey(hosts, tmp_path)
        try:
            ca = trustme.CA()
            leaf = ca.issue_cert(hosts.service_ip)
            ca_path, cert_path, key_path = (tmp_path / n for n in ("ca.pem", "cert.pem", "key.pem"))
            ca.cert_pem.write_to_path(str(ca_path))
            leaf.private_key_pem.write_to_path(str(key_path))
            cert_path.write_bytes(b"".join(b.bytes() for b in leaf.cert_chain_pems))
            port = free_port()
            settings = make_settings(
                **target_of(valkey_server),
                NODE_ENV="development",
                SVC_UNSAFE_CLI=True,
                HISTORY_SAMPLE_INTERVAL_MS=500,
                AUTH_PUBLIC_URL=f"https://{hosts.service_ip}:{port}",
            )
            app = create_app(settings)
            config = uvicorn.Config(
                app, host=hosts.service_ip, port=port, log_config=None, ws=LAZY_WS,
                lifespan="on", access_log=False, ssl_certfile=str(cert_path),
                ssl_keyfile=str(key_path),
            )  # fmt: skip
            server = uvicorn.Server(config)
            task = asyncio.create_task(server.serve())
            base = f"https://{hosts.service_ip}:{port}"
            try:
                for _ in range(400):  # bounded: 20 s
                    if server.started:
                        break
                    await asyncio.sleep(0.05)
                trusted = ssl.create_default_context(cafile=str(ca_path))
                async with httpx.AsyncClient(base_url=base, verify=trusted, timeout=10) as c:
                    await eventually(lambda: _ready(c), within=20)
                    yield Stage(hosts, base, c, ca_path, tmp_path)
            finally:
                server.should_exit = True
                # uvicorn's sans-I/O WebSocket raises InvalidState at shutdown for a socket
                # already closing (the agent that was just stopped): the server has stopped.
                with contextlib.suppress(websockets.exceptions.InvalidState):
                    await asyncio.wait_for(task, timeout=20)
        finally:
            valkey.kill()
            valkey.wait(timeout=10)


async def _ready(client: httpx.AsyncClient) -> bool:
    return (await client.get("/api/agents")).status_code == 200


async def _token(s: Stage, name: str) -> tuple[dict[str, Any], Path]:
    made = await s.client.post("/api/agent-tokens", json={"name": name})
    assert made.status_code == 201, made.text
    body: dict[str, Any] = made.json()
    token_file = s.workdir / f"{name}.token"
    token_file.write_text(body["token"])
    token_file.chmod(0o600)
    return body, token_file


async def _agent_of(s: Stage, connection_id: str) -> dict[str, Any]:
    agents = (await s.client.get("/api/agents")).json()
    found: dict[str, Any] = next(a for a in agents if a["connectionId"] == connection_id)
    return found


async def _cli(s: Stage, connection_id: str, *commands: str) -> list[dict[str, Any]]:
    url = s.base.replace("https://", "wss://") + f"/api/cli/ws?connectionId={connection_id}"
    context = ssl.create_default_context(cafile=str(s.ca_path))
    replies = []
    async with websockets.connect(url, ssl=context, origin=s.base) as ws:  # type: ignore[arg-type]
        for command in commands:
            await ws.send(json.dumps({"type": "execute", "command": command}))
            replies.append(json.loads(await ws.recv()))
    return replies


async def test_an_unreachable_instance_is_watched_through_its_agent(
    valkey_server: RunningServer, tmp_path: Path, receiver: Receiver
) -> None:
    async with stage(valkey_server, tmp_path) as s:
        # This host has no way to the database's network.
        direct = await s.client.post(
            "/api/connections/test", json={"host": s.hosts.db_ip, "port": DB_PORT}
        )
        assert direct.status_code != 200 or direct.json().get("connected") is not True
        hook = await s.client.post(
            "/api/webhooks",
            json={"name": "ops", "url": receiver.url(), "events": ["instance.down", "instance.up"]},
        )
        assert hook.status_code == 201, hook.text
        token, token_file = await _token(s, "behind-a-firewall")
        cid = token["connectionId"]
        agent = s.agent(token_file).start()
        try:

            async def linked() -> bool:
                return bool((await _agent_of(s, cid))["linked"])

            await eventually(linked, within=20)
            shown = await _agent_of(s, cid)
            assert shown["engine"] == "valkey"
            assert shown["engineVersion"].startswith("9.")
            headers = {"x-connection-id": cid}

            # The dashboard, the INFO view and the history all show the hidden instance.
            async def polled() -> bool:
                info = await s.client.get("/api/metrics/info", headers=headers)
                return info.status_code == 200

            await eventually(polled, within=20)
            info = (await s.client.get("/api/metrics/info", headers=headers)).json()
            # The instance behind the agent, not the service's own default connection.
            assert int(info["sections"]["server"]["tcp_port"]) == DB_PORT, info["sections"]
            s.client.cookies.set("svc_connection", cid)
            page = await s.client.get("/")
            assert page.status_code == 200
            assert "behind-a-firewall" in page.text

            async def charted() -> bool:
                history = await s.client.get("/api/metrics/history", headers=headers)
                return history.status_code == 200 and len(history.json()["points"]) >= 2

            await eventually(charted, within=20)
            # Every command lands in its slow log (threshold 0): the polls' own included.
            slowlog = await s.client.get("/api/metrics/slowlog", headers=headers)
            assert slowlog.status_code == 200, slowlog.text
            assert slowlog.json(), "the slow log through the agent is empty"

            # CLI reads work; a write passes the service (SVC_UNSAFE_CLI) but not the agent.
            dbsize, write, read = await _cli(s, cid, "DBSIZE", "SET planted 1", "GET planted")
            assert dbsize["resultType"] == "integer", dbsize
            assert "NOPERM" in write.get("result", "") + write.get("error", ""), write
            assert read["result"] == "(nil)", read
            refused = await _agent_of(s, cid)
            assert refused["refusedCommands"] >= 1
            assert refused["lastRefused"] == "SET"
            assert "refused SET" in agent.log

            # The agent dies: the instance is down; it comes back: up.
            agent.kill()
            await eventually(lambda: _delivered(receiver, "instance.down", cid), within=20)
            agent = s.agent(token_file).start()
            await eventually(lambda: _delivered(receiver, "instance.up", cid), within=30)

            # A revoked token drops the link within a second.
            await eventually(linked, within=20)
            revoked_at = time.monotonic()
            gone = await s.client.delete(f"/api/agent-tokens/{token['id']}")
            assert gone.status_code == 200
            assert gone.json()["revokedAt"] is not None

            async def unlinked() -> bool:
                return not (await _agent_of(s, cid))["linked"]

            await eventually(unlinked, within=1.0, every=0.02)
            assert time.monotonic() - revoked_at < 1.0
            await eventually(lambda: _async("4003" in agent.log), within=5)
            assert token["token"] not in agent.log
        finally:
            agent.stop()


async def _async(value: bool) -> bool:
    return value


async def _delivered(receiver: Receiver, event: str, cid: str) -> bool:
    return any(r.event == event and cid in r.body.decode() for r in receiver.requests)
