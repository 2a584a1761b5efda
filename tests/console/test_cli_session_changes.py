"""A change to the user reaches an open CLI socket on its next command: signed out or
removed closes it (1008), demoted gets the member policy from then on."""

from collections.abc import AsyncIterator

import pytest
from websockets.exceptions import ConnectionClosed

from tests.fixtures.served_team import ServedTeam, served_team
from tests.fixtures.servers import RunningServer
from tests.fixtures.workspace import workspace_settings


@pytest.fixture
async def team(valkey_server: RunningServer) -> AsyncIterator[ServedTeam]:
    settings = workspace_settings(valkey_server, SVC_UNSAFE_CLI=True)
    async with served_team(settings) as served:
        yield served


async def test_a_removed_member_is_closed_out_on_the_next_command(team: ServedTeam):
    member = await team.join("Rita")
    assert team.owner is not None
    async with team.cli(member) as cli:
        assert await cli.result("PING") == "PONG"
        removed = await team.owner.client.delete(f"/api/workspace/members/{member.id}")
        assert removed.status_code == 204
        frame = await cli.run("GET anything")
        assert frame["type"] == "error"
        assert frame["error"].startswith("Your session has ended")
        with pytest.raises(ConnectionClosed):
            await cli.run("PING")
        assert cli.socket.close_code == 1008
        assert (cli.socket.close_reason or "").startswith("Your session has ended")
    # What ran before the removal is in the log; the refused command after it is not.
    assert [e["details"]["command"] for e in await team.activity(member)] == ["PING"]


async def test_signing_out_closes_the_open_socket(team: ServedTeam):
    member = await team.join("Sam")
    async with team.cli(member) as cli:
        assert await cli.result("PING") == "PONG"
        signed_out = await member.client.post("/api/auth/logout")
        assert signed_out.status_code in (200, 204)
        frame = await cli.run("PING")
        assert frame["error"].startswith("Your session has ended")
        await cli.socket.wait_closed()
        assert cli.socket.close_code == 1008


async def test_a_demoted_admin_gets_the_member_policy_at_once(
    team: ServedTeam, valkey_server: RunningServer
):
    admin = await team.join("Dee", role="admin")
    assert team.owner is not None
    key = "cli-test:demoted"
    try:
        async with team.cli(admin) as cli:
            assert (await cli.run(f"SET {key} before"))["result"] == "OK"
            demoted = await team.owner.client.put(
                f"/api/workspace/members/{admin.id}", json={"role": "member"}
            )
            assert demoted.status_code == 200, demoted.text
            message = await cli.refusal(f"SET {key} after")
            assert message.startswith("SET is not allowed for members")
            assert await cli.result(f"GET {key}") == '"before"'
        with valkey_server.client() as conn:
            assert conn.get(key) == "before"
    finally:
        with valkey_server.client() as conn:
            conn.delete(key)


async def test_a_promoted_member_may_write_from_the_next_command(
    team: ServedTeam, valkey_server: RunningServer
):
    member = await team.join("Pip")
    assert team.owner is not None
    key = "cli-test:promoted"
    try:
        async with team.cli(member) as cli:
            assert (await cli.refusal(f"SET {key} v")).startswith("SET is not allowed for members")
            promoted = await team.owner.client.put(
                f"/api/workspace/members/{member.id}", json={"role": "admin"}
            )
            assert promoted.status_code == 200, promoted.text
            assert (await cli.run(f"SET {key} v"))["result"] == "OK"
    finally:
        with valkey_server.client() as conn:
            conn.delete(key)


async def test_a_script_with_an_api_token_is_closed_out_when_the_token_is_revoked(
    team: ServedTeam,
):
    admin = await team.join("Tia", role="admin")
    made = await admin.client.post("/api/tokens", json={"name": "cli script"})
    assert made.status_code == 201, made.text
    token = made.json()
    async with team.cli(None, token=token["token"]) as cli:
        assert await cli.result("PING") == "PONG"
        revoked = await admin.client.delete(f"/api/tokens/{token['id']}")
        assert revoked.status_code == 204
        assert (await cli.refusal("PING")).startswith("Your session has ended")
        await cli.socket.wait_closed()
        assert cli.socket.close_code == 1008
    [entry] = await team.activity(admin)
    assert entry["details"]["via"] == "token"
