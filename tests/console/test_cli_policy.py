"""The CLI's command policy: an allowlist matched after ASCII upper-casing, deny by default."""

import pytest

from svc_monitor.auth.models import Role
from svc_monitor.console.cli.parsing import split_command
from svc_monitor.console.cli.policy import NEVER, READ, Kind, decide

ALL_ROLES = (Role.MEMBER, Role.ADMIN, Role.OWNER, None)


def check(line: str, role: Role | None, *, unsafe: bool = False):
    return decide(split_command(line), role=role, unsafe=unsafe)


class TestReads:
    @pytest.mark.parametrize(
        "line",
        [
            "GET k",
            "get k",
            "MGET a b",
            "SCAN 0 MATCH user:* COUNT 100",
            "HGETALL h",
            "XRANGE s - +",
            "XREAD COUNT 10 STREAMS s 0",
            "XREAD STREAMS block 0",  # a stream called "block" is not the BLOCK option
            "INFO",
            "memory usage k",
            "OBJECT ENCODING k",
            "SLOWLOG GET 10",
            "LATENCY DOCTOR",
            "CLUSTER INFO",
            "COMMAND COUNT",
            "SORT_RO k",
            "BITFIELD_RO k GET u8 0",
        ],
    )
    @pytest.mark.parametrize("role", ALL_ROLES)
    def test_reads_run_for_every_role(self, line: str, role: Role | None):
        decision = check(line, role)
        assert decision.allowed
        assert decision.kind is Kind.READ

    def test_names_spanning_two_words_are_read_as_one(self):
        decision = check("memory usage k", Role.MEMBER)
        assert (decision.name, decision.arity) == ("MEMORY USAGE", 2)


class TestMembers:
    @pytest.mark.parametrize(
        ("line", "shown"),
        [
            ("CONFIG SET dir /tmp", "CONFIG"),
            ("config set dir /tmp", "CONFIG"),
            ("  CoNfIg   SET dir /tmp", "CONFIG"),
            ("CONFIG GET requirepass", "CONFIG"),
            ("ACL LIST", "ACL"),
            ("ACL GETUSER default", "ACL"),
            ("CLIENT LIST", "CLIENT"),
            ("CLIENT KILL ID 1", "CLIENT"),
            ("DEBUG SLEEP 100", "DEBUG"),
            ("SLOWLOG RESET", "SLOWLOG RESET"),
            ("COMMANDLOG RESET slow", "COMMANDLOG RESET"),
            ("LATENCY RESET", "LATENCY RESET"),
            ("SET k v", "SET"),
            ("DEL k", "DEL"),
            ("FLUSHALL", "FLUSHALL"),
            ("FLUSHDB", "FLUSHDB"),
            ("EXPIRE k 1", "EXPIRE"),
            ("RENAME a b", "RENAME"),
            ("REPLICAOF 127.0.0.1 1", "REPLICAOF"),
            ("SLAVEOF 127.0.0.1 1", "SLAVEOF"),
            ("MIGRATE h 1 k 0 1", "MIGRATE"),
            ("MODULE LOAD /x.so", "MODULE"),
            ("SAVE", "SAVE"),
            ("BGSAVE", "BGSAVE"),
            ("SWAPDB 0 1", "SWAPDB"),
            ("SCRIPT LOAD x", "SCRIPT LOAD"),
            ("FUNCTION LOAD x", "FUNCTION LOAD"),
            ("EVAL \"return redis.call('SET','k','v')\" 0", "EVAL"),
            ("EVALSHA abc 0", "EVALSHA"),
            ("FCALL f 0", "FCALL"),
            ("EVAL_RO 'while true do end' 0", "EVAL_RO"),
            ("SORT k STORE d", "SORT"),
            ("GEORADIUS k 0 0 1 km STORE d", "GEORADIUS"),
            ("BITFIELD k SET u8 0 1", "BITFIELD"),
            ("GETDEL k", "GETDEL"),
            ("GETEX k PX 1", "GETEX"),
            ("XREADGROUP GROUP g c STREAMS s >", "XREADGROUP"),
            ("KEYS *", "KEYS"),
            ("PUBLISH ch msg", "PUBLISH"),
        ],
    )
    def test_writes_and_admin_commands_are_refused(self, line: str, shown: str):
        for unsafe in (False, True):  # whatever SVC_UNSAFE_CLI says
            decision = check(line, Role.MEMBER, unsafe=unsafe)
            assert not decision.allowed
            assert decision.reason is not None
            assert decision.reason.startswith(
                f"{shown} is not allowed for members: the CLI is read-only for the member role"
            )

    def test_keys_and_sort_say_what_to_use_instead(self):
        assert "SCAN lists keys" in (check("KEYS *", Role.MEMBER).reason or "")
        assert "SORT_RO is the read-only form" in (check("SORT k", Role.MEMBER).reason or "")

    @pytest.mark.parametrize(
        "line",
        [
            "\u0421ONFIG SET dir /tmp",  # CONFIG with a Cyrillic capital es
            "\uff23\uff2f\uff2e\uff26\uff29\uff27 SET dir /tmp",  # full-width letters
            "\u017fet k v",  # long s: str.upper() would make this SET
            "\u017fcan 0",  # ... and this SCAN: refused too, there is no look-alike reading
            "G\u0435T k",  # GET with a Cyrillic small ie
        ],
    )
    def test_look_alike_names_match_nothing(self, line: str):
        decision = check(line, Role.MEMBER)
        assert not decision.allowed
        assert decision.kind is Kind.WRITE


class TestAdmins:
    @pytest.mark.parametrize("role", [Role.ADMIN, Role.OWNER, None])
    def test_writes_need_unsafe_cli(self, role: Role | None):
        refused = check("CONFIG SET maxmemory 1", role)
        assert not refused.allowed
        assert refused.reason == (
            "CONFIG is not allowed: the CLI runs read commands only; set SVC_UNSAFE_CLI=true "
            "to allow write commands for admins"
        )
        allowed = check("CONFIG SET maxmemory 1", role, unsafe=True)
        assert allowed.allowed
        assert (allowed.kind, allowed.name) == (Kind.WRITE, "CONFIG SET")

    @pytest.mark.parametrize(
        "line",
        [
            "MONITOR",
            "SUBSCRIBE a",
            "PSUBSCRIBE *",
            "SSUBSCRIBE a",
            "BLPOP k 0",
            "BRPOP k 0",
            "BRPOPLPUSH a b 0",
            "BLMOVE a b LEFT LEFT 0",
            "BLMPOP 0 1 k LEFT",
            "BZPOPMIN k 0",
            "BZPOPMAX k 0",
            "BZMPOP 0 1 k MIN",
            "XREAD BLOCK 0 STREAMS s $",
            "xread count 1 block 10 streams s $",
            "XREADGROUP GROUP g c BLOCK 0 STREAMS s >",
            "WAIT 1 0",
            "WAITAOF 1 0 0",
            "CLIENT PAUSE 1000",
            "CLIENT REPLY OFF",
            "CLIENT SETNAME x",
            "SHUTDOWN",
            "SELECT 5",
            "AUTH other pass",
            "HELLO 3 AUTH u p",
            "RESET",
            "QUIT",
            "READONLY",
            "MULTI",
            "EXEC",
            "SYNC",
            "PSYNC ? -1",
            "DEBUG SEGFAULT",
        ],
    )
    @pytest.mark.parametrize("role", ALL_ROLES)
    def test_commands_that_hang_or_hijack_are_refused_for_everyone(
        self, line: str, role: Role | None
    ):
        decision = check(line, role, unsafe=True)
        assert not decision.allowed
        assert decision.kind is Kind.NEVER
        assert decision.reason is not None
        assert " is not allowed in the CLI: " in decision.reason


def test_no_command_is_both_a_read_and_refused_for_everyone():
    assert not READ & NEVER.keys()
