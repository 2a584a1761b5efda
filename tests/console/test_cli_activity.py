"""What the activity log keeps of CLI commands (`cli.command`): who, from where, on which
connection, the command and its argument count; argument values only for reads, capped;
and nothing at all of refused commands."""

from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.fixtures.served_team import Person, ServedTeam, served_team
from tests.fixtures.servers import RunningServer
from tests.fixtures.workspace import workspace_settings


@pytest.fixture(scope="module")
async def team(valkey_server: RunningServer) -> AsyncIterator[tuple[ServedTeam, Person, Person]]:
    settings = workspace_settings(valkey_server, SVC_UNSAFE_CLI=True)
    async with served_team(settings) as served:
        yield served, await served.join("Lee"), await served.join("Ash", role="admin")


async def test_a_read_is_recorded_with_its_arguments(team: Any):
    served, member, _ = team
    async with served.cli(member) as cli:
        await cli.run("GET cli-test:activity-read")
    [entry] = (await served.activity(member))[:1]
    assert entry["action"] == "cli.command"
    assert entry["actorId"] == member.id
    assert entry["actorName"] == "Lee"
    assert entry["sourceIp"] == "127.0.0.1"
    assert entry["connectionId"] == "env-default"
    assert entry["details"] == {
        "command": "GET",
        "argCount": 1,
        "args": ["cli-test:activity-read"],
        "via": "session",
        "ok": True,
    }


async def test_a_write_is_recorded_without_its_values(team: Any, valkey_server: RunningServer):
    served, _, admin = team
    try:
        async with served.cli(admin) as cli:
            assert (await cli.run("SET cli-test:activity-write s3cret-value"))["result"] == "OK"
    finally:
        with valkey_server.client() as conn:
            conn.delete("cli-test:activity-write")
    [entry] = (await served.activity(admin))[:1]
    assert entry["details"] == {"command": "SET", "argCount": 2, "via": "session", "ok": True}


async def test_config_is_recorded_without_values_and_auth_not_at_all(team: Any):
    served, _, admin = team
    before = len(await served.activity(admin))
    async with served.cli(admin) as cli:
        await cli.run("CONFIG GET maxmemory")
        assert (await cli.refusal("AUTH default hunter2")).startswith("AUTH is not allowed")
        assert (await cli.refusal("HELLO 3 AUTH default hunter2")).startswith("HELLO is not")
    entries = await served.activity(admin)
    assert len(entries) == before + 1
    assert entries[0]["details"] == {
        "command": "CONFIG GET",
        "argCount": 1,
        "via": "session",
        "ok": True,
    }
    assert "hunter2" not in str(entries)


async def test_at_most_sixteen_arguments_of_128_characters_are_kept(team: Any):
    served, member, _ = team
    keys = [f"k{i}" for i in range(20)]
    long_key = "L" * 300
    async with served.cli(member) as cli:
        await cli.run("MGET " + " ".join(keys))
        await cli.run(f"EXISTS {long_key}")
    exists, mget = (await served.activity(member))[:2]
    assert mget["details"]["argCount"] == 20
    assert mget["details"]["args"] == keys[:16]
    assert exists["details"]["args"] == ["L" * 128]


async def test_a_failed_command_is_recorded_as_not_ok(team: Any, valkey_server: RunningServer):
    served, member, _ = team
    try:
        with valkey_server.client() as conn:
            conn.rpush("cli-test:activity-list", "a")
        async with served.cli(member) as cli:
            assert (await cli.run("GET cli-test:activity-list"))["resultType"] == "error"
    finally:
        with valkey_server.client() as conn:
            conn.delete("cli-test:activity-list")
    [entry] = (await served.activity(member))[:1]
    assert entry["details"]["ok"] is False


async def test_refused_commands_leave_no_trace(team: Any):
    served, member, _ = team
    before = await served.activity(member)
    async with served.cli(member) as cli:
        await cli.refusal("CONFIG SET maxmemory-policy allkeys-lru")
        await cli.refusal("SET k v")
        await cli.refusal("FLUSHALL")
        await cli.refusal('GET "unbalanced')
        await cli.refusal("BLPOP k 0")
    assert await served.activity(member) == before
