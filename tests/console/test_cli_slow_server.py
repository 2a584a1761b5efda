"""A server that stops answering: the CLI's command ends at its deadline with a message,
the socket stays usable, and polling elsewhere is not held up by it."""

import asyncio
import time

from tests.fixtures.app import make_settings, target_of
from tests.fixtures.served_team import served_team
from tests.fixtures.servers import ServerFactory


async def test_a_hung_server_ends_the_command_at_its_deadline(server_factory: ServerFactory):
    valkey = server_factory.start("valkey")
    settings = make_settings(
        **target_of(valkey), ENGINE_CONNECT_TIMEOUT_MS=300, ENGINE_COMMAND_TIMEOUT_MS=500
    )
    try:
        async with served_team(settings) as served, served.cli(None) as cli:
            assert await cli.result("PING") == "PONG"
            server_factory.pause(valkey)
            try:
                started = time.monotonic()
                frame = await asyncio.wait_for(cli.run("GET slow"), timeout=10)
                waited = time.monotonic() - started
            finally:
                server_factory.resume(valkey)
            assert frame["type"] == "error"
            assert frame["error"].startswith("No reply from the server: ")
            assert "did not answer within 0.5 s" in frame["error"]
            assert waited < 2
            # The next command gets a fresh connection and an answer.
            assert await cli.result("PING") == "PONG"
    finally:
        server_factory.stop(valkey)
