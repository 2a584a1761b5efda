"""The browser CLI socket against a real Valkey: who may open it, what runs for whom, and
how replies read.

Each refusal is checked on the server itself (a direct client to the Valkey): refused
means the server never saw the command, not only that the page said so.
"""

import asyncio
import contextlib
import secrets
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from websockets.exceptions import InvalidStatus

from tests.fixtures.served_team import Person, ServedTeam, served_team
from tests.fixtures.servers import RunningServer
from tests.fixtures.workspace import workspace_settings


def tag() -> str:
    return f"cli-test:{secrets.token_hex(4)}"


@pytest.fixture
def keys(valkey_server: RunningServer) -> Iterator[list[str]]:
    """Keys a test creates on the shared Valkey, deleted afterwards."""
    made: list[str] = []
    yield made
    if made:
        with valkey_server.client() as conn:
            conn.delete(*made)


@pytest.fixture(scope="module")
async def team(valkey_server: RunningServer) -> AsyncIterator[tuple[ServedTeam, Person, Person]]:
    """User control on, SVC_UNSAFE_CLI off: the served app, a member and an admin."""
    async with served_team(workspace_settings(valkey_server)) as served:
        yield served, await served.join("Mia"), await served.join("Ada", role="admin")


@pytest.fixture(scope="module")
async def unsafe_team(
    valkey_server: RunningServer,
) -> AsyncIterator[tuple[ServedTeam, Person, Person]]:
    """As `team`, with SVC_UNSAFE_CLI=true."""
    settings = workspace_settings(valkey_server, SVC_UNSAFE_CLI=True)
    async with served_team(settings) as served:
        yield served, await served.join("Mo"), await served.join("Al", role="admin")


class TestHandshake:
    async def test_no_session_cookie_is_refused_before_the_handshake(self, team: Any):
        served, _, _ = team
        with pytest.raises(InvalidStatus) as refused:
            async with served.cli(None):
                pass
        assert refused.value.response.status_code == 403

    async def test_a_tampered_cookie_is_refused(self, team: Any):
        served, member, _ = team
        forged = member.cookie[:-3] + ("aaa" if not member.cookie.endswith("aaa") else "bbb")
        with pytest.raises(InvalidStatus) as refused:
            async with served.cli(member, cookie=forged):
                pass
        assert refused.value.response.status_code == 403

    async def test_a_foreign_origin_is_refused_even_with_a_valid_cookie(self, team: Any):
        served, member, _ = team
        with pytest.raises(InvalidStatus) as refused:
            async with served.cli(member, origin="https://evil.example"):
                pass
        assert refused.value.response.status_code == 403

    async def test_an_unknown_connection_is_an_error_then_a_close(self, team: Any):
        served, member, _ = team
        async with served.cli(member, connection_id="no-such-connection") as cli:
            frame = await cli.answer()
            assert frame == {
                "type": "error",
                "error": "Connection 'no-such-connection' not found",
            }
            await cli.socket.wait_closed()
            assert cli.socket.close_code == 4404

    async def test_a_push_connection_gets_the_live_connection_answer(self, team: Any):
        """It is sent no commands: the socket says so, as the API's live-only routes do."""
        served, member, _ = team
        made = await served.owner.client.post(
            "/api/connections",
            json={"source": "push", "name": "pushed-cli", "host": "10.9.8.7", "port": 6390},
        )
        assert made.status_code == 201, made.text
        try:
            async with served.cli(member, connection_id=made.json()["id"]) as cli:
                frame = await cli.answer()
                assert frame["type"] == "error"
                assert frame["error"].startswith("This view needs a live connection: 'pushed-cli'")
                await cli.socket.wait_closed()
                assert cli.socket.close_code == 4409
        finally:
            await served.owner.client.delete(f"/api/connections/{made.json()['id']}")

    async def test_the_connection_is_chosen_by_its_id(self, team: Any):
        served, member, _ = team
        listed = await member.client.get("/api/connections")
        connection_id = listed.json()[0]["id"]
        async with served.cli(member, connection_id=connection_id) as cli:
            assert await cli.result("PING") == "PONG"


class TestMember:
    async def test_get_runs_and_reads_like_redis_cli(
        self, team: Any, valkey_server: RunningServer, keys: list[str]
    ):
        served, member, _ = team
        key = tag()
        keys.append(key)
        with valkey_server.client() as conn:
            conn.set(key, 'say "hi"\n')
        async with served.cli(member) as cli:
            frame = await cli.run(f"GET {key}")
        assert frame["type"] == "result"
        assert frame["result"] == '"say \\"hi\\"\\n"'
        assert frame["resultType"] == "string"
        assert frame["truncated"] is False
        assert frame["durationMs"] >= 0

    @pytest.mark.parametrize(
        ("command", "family"),
        [
            ("CONFIG SET maxmemory-policy allkeys-lru", "CONFIG"),
            ("  cOnFiG   set maxmemory-policy allkeys-lru", "CONFIG"),
            ("CONFIG GET requirepass", "CONFIG"),
            ("SET {key} changed", "SET"),
            ("DEL {key}", "DEL"),
            ("FLUSHALL", "FLUSHALL"),
            ("EVAL \"return redis.call('SET', KEYS[1], 'changed')\" 1 {key}", "EVAL"),
            ("MULTI", "MULTI"),  # refused for everyone: its own message, tested below
            ("CLIENT KILL TYPE normal", "CLIENT"),
            ("CLIENT LIST", "CLIENT"),
            ("ACL LIST", "ACL"),
            ("SLOWLOG RESET", "SLOWLOG RESET"),
            ("LATENCY RESET", "LATENCY RESET"),
            ("DEBUG SLEEP 0", "DEBUG"),
            ("SORT {key} STORE elsewhere", "SORT"),
            ("KEYS *", "KEYS"),
        ],
    )
    async def test_writes_and_admin_commands_are_refused_and_change_nothing(
        self,
        team: Any,
        valkey_server: RunningServer,
        keys: list[str],
        command: str,
        family: str,
    ):
        served, member, _ = team
        key = tag()
        keys.append(key)
        with valkey_server.client() as conn:
            conn.set(key, "original")
            policy_before = conn.config_get("maxmemory-policy")
        async with served.cli(member) as cli:
            message = await cli.refusal(command.format(key=key))
            assert await cli.result("PING") == "PONG"  # the socket is still usable
        if family != "MULTI":
            assert message.startswith(f"{family} is not allowed for members: ")
            assert "read-only for the member role" in message
        else:
            assert message.startswith("MULTI is not allowed in the CLI: ")
        with valkey_server.client() as conn:
            assert conn.get(key) == "original"
            assert conn.config_get("maxmemory-policy") == policy_before
            assert conn.dbsize() > 0

    async def test_member_stays_read_only_with_unsafe_cli_on(
        self, unsafe_team: Any, valkey_server: RunningServer, keys: list[str]
    ):
        served, member, _ = unsafe_team
        key = tag()
        keys.append(key)
        async with served.cli(member) as cli:
            message = await cli.refusal(f"SET {key} value")
            assert await cli.refusal("CONFIG SET maxmemory-policy allkeys-lru")
        assert message.startswith("SET is not allowed for members")
        with valkey_server.client() as conn:
            assert conn.exists(key) == 0

    async def test_lines_with_newlines_are_one_command(
        self, team: Any, valkey_server: RunningServer, keys: list[str]
    ):
        served, member, _ = team
        key = tag()
        keys.append(key)
        with valkey_server.client() as conn:
            conn.set(key, "kept")
        async with served.cli(member) as cli:
            frame = await cli.run(f"GET {key}\r\nFLUSHALL")
            also = await cli.run(f"GET {key}\nFLUSHALL")
        # One GET with an odd argument: the server refuses its arity, nothing is flushed.
        assert frame["resultType"] == "error"
        assert frame["result"].startswith("(error) ERR wrong number of arguments")
        assert also == {**also, "resultType": "error"}
        with valkey_server.client() as conn:
            assert conn.get(key) == "kept"


class TestAdmin:
    async def test_writes_are_refused_without_unsafe_cli(
        self, team: Any, valkey_server: RunningServer, keys: list[str]
    ):
        served, _, admin = team
        key = tag()
        keys.append(key)
        async with served.cli(admin) as cli:
            message = await cli.refusal(f"SET {key} value")
            config = await cli.refusal("CONFIG GET maxmemory")
            assert await cli.result(f"EXISTS {key}") == "(integer) 0"
        assert message == (
            "SET is not allowed: the CLI runs read commands only; set SVC_UNSAFE_CLI=true "
            "to allow write commands for admins"
        )
        assert config.startswith("CONFIG is not allowed: ")
        with valkey_server.client() as conn:
            assert conn.exists(key) == 0

    async def test_writes_run_with_unsafe_cli(
        self, unsafe_team: Any, valkey_server: RunningServer, keys: list[str]
    ):
        served, _, admin = unsafe_team
        key = tag()
        keys.append(key)
        async with served.cli(admin) as cli:
            stored = await cli.run(f'SET {key} "two words"')
            read = await cli.result(f"GET {key}")
            maxmemory = await cli.result("CONFIG GET maxmemory")
            unknown = await cli.run("NOSUCHCOMMAND x")
        assert stored["result"] == "OK"
        assert stored["resultType"] == "status"
        assert read == '"two words"'
        assert maxmemory.startswith('1) "maxmemory"\n2) "')
        assert unknown["resultType"] == "error"
        assert unknown["result"].startswith("(error) ERR unknown command")
        with valkey_server.client() as conn:
            assert conn.get(key) == "two words"

    @pytest.mark.parametrize(
        "command",
        [
            "MONITOR",
            "SUBSCRIBE news",
            "PSUBSCRIBE *",
            "SSUBSCRIBE news",
            "BLPOP {key} 0",
            "BRPOP {key} 0",
            "BLMOVE {key} other LEFT RIGHT 0",
            "BZPOPMIN {key} 0",
            "BZMPOP 0 1 {key} MIN",
            "XREAD BLOCK 0 STREAMS {key} $",
            "XREADGROUP GROUP g c BLOCK 0 STREAMS {key} >",
            "WAIT 1 0",
            "WAITAOF 1 0 0",
            "CLIENT PAUSE 10000",
            "CLIENT REPLY OFF",
            "SHUTDOWN NOSAVE",
            "SELECT 1",
            "AUTH default secret",
            "HELLO 3",
            "RESET",
            "QUIT",
            "READONLY",
            "MULTI",
            "DEBUG SEGFAULT",
        ],
    )
    async def test_commands_that_would_hang_or_hijack_are_refused_for_everyone(
        self, unsafe_team: Any, command: str
    ):
        served, _, admin = unsafe_team
        async with served.cli(admin) as cli:
            message = await cli.refusal(command.format(key=tag()))
            assert await cli.result("PING") == "PONG"
        name = " ".join(command.split()[:2]) if command.startswith(("CLIENT", "DEBUG")) else None
        assert message.startswith(f"{name or command.split()[0]} is not allowed in the CLI: ")


class TestReplies:
    async def test_replies_read_like_redis_cli(
        self, team: Any, valkey_server: RunningServer, keys: list[str]
    ):
        served, member, _ = team
        base = tag()
        lst, hsh, stream, empty = f"{base}:l", f"{base}:h", f"{base}:s", f"{base}:none"
        keys.extend([lst, hsh, stream])
        with valkey_server.client() as conn:
            conn.rpush(lst, *[f"v{i}" for i in range(1, 11)])
            conn.hset(hsh, mapping={"f": "1"})
            conn.xadd(stream, {"a": "1"}, id="1-1")
        async with served.cli(member) as cli:
            answers = {
                "LLEN": await cli.run(f"LLEN {lst}"),
                "LRANGE": await cli.run(f"LRANGE {lst} 0 -1"),
                "EMPTY": await cli.run(f"LRANGE {empty} 0 -1"),
                "NIL": await cli.run(f"GET {empty}"),
                "HGETALL": await cli.run(f"HGETALL {hsh}"),
                "XRANGE": await cli.run(f"XRANGE {stream} - +"),
                "TYPE": await cli.run(f"TYPE {lst}"),
                "PING": await cli.run("PING"),
                "ECHO": await cli.run("PING hello"),
                "WRONGTYPE": await cli.run(f"GET {lst}"),
                "INFO": await cli.run("INFO server"),
            }
        shown = {name: (a["result"], a["resultType"]) for name, a in answers.items()}
        assert shown["LLEN"] == ("(integer) 10", "integer")
        assert shown["LRANGE"][1] == "array"
        assert shown["LRANGE"][0].splitlines()[0] == ' 1) "v1"'
        assert shown["LRANGE"][0].splitlines()[9] == '10) "v10"'
        assert shown["EMPTY"] == ("(empty array)", "empty-array")
        assert shown["NIL"] == ("(nil)", "nil")
        assert shown["HGETALL"] == ('1) "f"\n2) "1"', "array")
        assert shown["XRANGE"] == ('1) 1) "1-1"\n   2) 1) "a"\n      2) "1"', "array")
        assert shown["TYPE"] == ("list", "status")
        assert shown["PING"] == ("PONG", "status")
        assert shown["ECHO"] == ('"hello"', "string")
        assert shown["WRONGTYPE"][1] == "error"
        assert shown["WRONGTYPE"][0].startswith("(error) WRONGTYPE Operation against a key")
        assert shown["INFO"][0].startswith("# Server\n")
        assert "\r" not in shown["INFO"][0]

    async def test_a_huge_reply_is_cut_at_512_kib_with_a_note(
        self, team: Any, valkey_server: RunningServer, keys: list[str]
    ):
        served, member, _ = team
        key = tag()
        keys.append(key)
        with valkey_server.client() as conn:
            conn.set(key, b"x" * (600 * 1024))
            conn.rpush(f"{key}:l", *range(100_000))
        keys.append(f"{key}:l")
        async with served.cli(member) as cli:
            value = await cli.run(f"GET {key}")
            listed = await cli.run(f"LRANGE {key}:l 0 -1")
        for frame in (value, listed):
            assert frame["truncated"] is True
            assert frame["result"].endswith(
                "(output truncated: only the first 512 KiB of the reply is shown)"
            )
            assert len(frame["result"]) < 512 * 1024 + 100
        assert listed["result"].startswith('     1) "0"\n     2) "1"\n')


class TestProtocol:
    @pytest.mark.parametrize(
        ("line", "why"),
        [
            ('SET {key} "unbalanced', "unbalanced quotes"),
            ("SET {key} 'unbalanced", "unbalanced quotes"),
            ('SET {key} "a"b', "closing quote"),
            ("SET {key} a\x00b", "NUL"),
            ('SET {key} "a\\x00b"', "NUL"),
            ("SET {key} " + "x " * 1001, "more than 1,000 arguments"),
            ("SET {key} " + "x" * (64 * 1024), "characters long"),
        ],
    )
    async def test_parse_errors_are_answered_and_nothing_is_sent(
        self, unsafe_team: Any, valkey_server: RunningServer, keys: list[str], line: str, why: str
    ):
        served, _, admin = unsafe_team
        key = tag()
        keys.append(key)
        async with served.cli(admin) as cli:
            message = await cli.refusal(line.format(key=key))
        assert message.startswith("Parse error: ")
        assert why in message
        assert message.endswith("nothing was sent")
        with valkey_server.client() as conn:
            assert conn.exists(key) == 0

    async def test_frames_that_are_not_commands_are_answered_with_an_error(self, team: Any):
        served, member, _ = team
        async with served.cli(member) as cli:
            await cli.socket.send("not json")
            not_json = await cli.answer()
            await cli.socket.send('{"type": "subscribe"}')
            unknown = await cli.answer()
            await cli.socket.send('{"type": "execute", "command": 42}')
            not_text = await cli.answer()
            await cli.socket.send(b"\x00\x01")
            binary = await cli.answer()
            await cli.socket.send("[" * 100_000 + "]" * 100_000)  # past json's nesting depth
            nested = await cli.answer()
            empty = await cli.run("   ")
            assert await cli.result("PING") == "PONG"
        frames = (not_json, unknown, not_text, binary, nested, empty)
        assert {f["type"] for f in frames} == {"error"}
        assert not_text["error"] == '"command" must be a string, such as "GET foo"'
        assert binary["error"] == "Send JSON text frames, not binary ones"

    async def test_a_frame_over_one_mebibyte_closes_the_socket_with_1009(self, team: Any):
        served, member, _ = team
        async with served.cli(member) as cli:
            await cli.socket.send('{"type": "execute", "command": "GET ' + "x" * 2**21 + '"}')
            await cli.socket.wait_closed()
            assert cli.socket.close_code == 1009

    async def test_more_than_fifty_commands_a_second_are_refused(self, team: Any):
        served, member, _ = team
        async with served.cli(member) as cli:
            for _ in range(150):
                await cli.socket.send('{"type": "execute", "command": "PING"}')
            frames = [await cli.answer() for _ in range(150)]
            ran = sum(f["type"] == "result" for f in frames)
            limited = [f["error"] for f in frames if f["type"] == "error"]
            assert 50 <= ran < 150
            assert len(limited) == 150 - ran
            assert set(limited) == {
                "Too many commands: at most 50 per second in one CLI; this one was not run"
            }
            # The bucket refills: a second later commands run again.
            await asyncio.sleep(1.1)
            assert await cli.result("PING") == "PONG"

    async def test_at_most_ten_sockets_per_user(self, team: Any):
        served, member, _ = team
        async with contextlib.AsyncExitStack() as stack:
            for _ in range(10):
                cli = await stack.enter_async_context(served.cli(member))
                assert await cli.result("PING") == "PONG"
            async with served.cli(member) as extra:
                frame = await extra.answer()
                await extra.socket.wait_closed()
            assert frame["error"].startswith("Too many CLI sessions open: at most 10 per user")
            assert extra.socket.close_code == 1008
        async with served.cli(member) as again:  # closing them frees the places
            assert await again.result("PING") == "PONG"
