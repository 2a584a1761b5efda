"""The CLI with user control off (WORKSPACE_DISABLED=true): whoever reaches the service
gets the admin policy, from this service's own pages only."""

import pytest
from websockets.exceptions import InvalidStatus

from tests.fixtures.app import make_settings, target_of
from tests.fixtures.served_team import served_team
from tests.fixtures.servers import RunningServer


async def test_anyone_gets_the_admin_policy_and_writes_run_with_unsafe_cli(
    valkey_server: RunningServer,
):
    settings = make_settings(**target_of(valkey_server), SVC_UNSAFE_CLI=True)
    key = "cli-test:no-workspace"
    try:
        async with served_team(settings) as served, served.cli(None) as cli:
            assert (await cli.run(f"SET {key} open"))["result"] == "OK"
            assert await cli.result(f"GET {key}") == '"open"'
            assert (await cli.refusal("MONITOR")).startswith("MONITOR is not allowed in the CLI")
        with valkey_server.client() as conn:
            assert conn.get(key) == "open"
    finally:
        with valkey_server.client() as conn:
            conn.delete(key)


async def test_without_unsafe_cli_only_reads_run(valkey_server: RunningServer):
    settings = make_settings(**target_of(valkey_server))
    async with served_team(settings) as served, served.cli(None) as cli:
        assert await cli.result("PING") == "PONG"
        message = await cli.refusal("SET cli-test:no-workspace-read-only v")
    assert message.endswith("set SVC_UNSAFE_CLI=true to allow write commands for admins")


async def test_another_sites_page_cannot_open_the_cli(valkey_server: RunningServer):
    settings = make_settings(**target_of(valkey_server), SVC_UNSAFE_CLI=True)
    async with served_team(settings) as served:
        with pytest.raises(InvalidStatus) as refused:
            async with served.cli(None, origin="https://evil.example"):
                pass
    assert refused.value.response.status_code == 403
