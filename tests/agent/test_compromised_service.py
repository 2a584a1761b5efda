"""The agent decides what runs: a service that sends writes (compromised, or simply
wrong) is refused by the agent itself. The test plays that service: a WebSocket server
the real agent process dials, sending frames of its own choosing."""

import asyncio
import json
from pathlib import Path

import pytest
from websockets.asyncio.server import ServerConnection, serve

from svc_monitor.engine.agent_wire import Kind, decode, encode, pack_command, reply_end
from tests.agent.agent_process import AgentProcess
from tests.fixtures.app import free_port
from tests.fixtures.servers import HOST, ServerFactory

pytest_plugins = ["tests.fixtures.servers"]
pytestmark = pytest.mark.timeout(60)

TOKEN = "svc_agent_test-token-0123456789"


def _replies(payload: bytes) -> list[bytes]:
    out, pos = [], 0
    while pos < len(payload):
        end = reply_end(payload, pos)
        assert end > 0, payload
        out.append(payload[pos:end])
        pos = end
    return out


async def test_writes_from_the_service_are_refused_by_the_agent(
    server_factory: ServerFactory, tmp_path: Path
) -> None:
    server = server_factory.start("valkey")
    with server.client() as direct:
        direct.set("kept", "original")
        direct.config_resetstat()  # from here on, the command stats count only the agent's
    heard: asyncio.Queue[str | bytes] = asyncio.Queue()
    links: asyncio.Queue[ServerConnection] = asyncio.Queue()

    async def handler(socket: ServerConnection) -> None:
        assert socket.request is not None
        assert socket.request.headers["Authorization"] == f"Bearer {TOKEN}"
        hello = json.loads(await socket.recv())
        assert hello["type"] == "hello"
        await socket.send(json.dumps({"type": "welcome", "connectionId": "c1", "heartbeatS": 5}))
        await links.put(socket)
        async for message in socket:
            await heard.put(message)

    port = free_port()
    async with serve(handler, HOST, port):
        agent = AgentProcess(
            {
                "SVC_URL": f"http://{HOST}:{port}",
                "SVC_AGENT_ALLOW_HTTP": "true",
                "SVC_AGENT_TOKEN": TOKEN,
                "DB_HOST": server.host,
                "DB_PORT": str(server.port),
            },
            tmp_path,
        ).start()
        try:
            socket = await asyncio.wait_for(links.get(), 20)
            commands = [
                [b"SET", b"kept", b"overwritten"],
                [b"GET", b"kept"],
                [b"CONFIG", b"SET", b"maxmemory", b"1"],
                [b"FLUSHALL"],
                [b"EVAL", b"return redis.call('DEL','kept')", b"0"],
                [b"DBSIZE"],
            ]
            packed = b"".join(pack_command(c) for c in commands)
            # Split inside a command: the agent waits for the rest before it decides.
            await socket.send(encode(Kind.COMMANDS, 7, 1, packed[:10]))
            await socket.send(encode(Kind.COMMANDS, 7, 2, packed[10:]))
            refusals: list[str] = []
            replies: list[bytes] = []
            while len(replies) < len(commands):
                message = await asyncio.wait_for(heard.get(), 10)
                if isinstance(message, str):
                    refusals.append(json.loads(message)["command"])
                    continue
                frame = decode(message)
                assert (frame.kind, frame.session) == (Kind.REPLIES, 7)
                replies += _replies(frame.payload)
            set_, get, config, flush, script, dbsize = replies
            for refused in (set_, config, flush, script):
                assert refused.startswith(b"-NOPERM the svc-monitor agent runs read commands only")
            assert get == b"$8\r\noriginal\r\n"
            assert dbsize == b":1\r\n"
            while len(refusals) < 4:
                refusals.append(json.loads(await asyncio.wait_for(heard.get(), 5))["command"])
            assert sorted(refusals) == ["CONFIG SET", "EVAL", "FLUSHALL", "SET"]
        finally:
            agent.stop()
    with server.client() as direct:
        assert direct.get("kept") == "original"
        assert direct.config_get("maxmemory")["maxmemory"] != "1"
        # Nothing refused reached the instance: its command stats never counted one.
        stats = direct.info("commandstats")
        assert not {"cmdstat_set", "cmdstat_flushall", "cmdstat_eval"} & set(stats)
    assert agent.log.count("refused") >= 4
