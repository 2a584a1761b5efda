"""MONITOR lines as Valkey 9.1 and Redis 7.0 write them (recorded in replies/), hostile
lines, and the redaction of values."""

from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from svc_monitor.console.monitor.parsing import MAX_ARG_CHARS, MAX_ARGS, parse_line
from svc_monitor.console.monitor.redaction import MARKER, UNPARSED, redact_line

REPLIES = Path(__file__).parent / "replies"
ENGINES = ["valkey-9.1", "redis-7.0"]


def recorded(engine: str) -> list[bytes]:
    return (REPLIES / engine / "monitor.txt").read_bytes().splitlines()


def parsed(text: str | bytes) -> tuple[object, ...]:
    line = parse_line(text.encode() if isinstance(text, str) else text, seq=0)
    return line.command, line.args


@pytest.mark.parametrize("engine", ENGINES)
class TestRecordedLines:
    def test_every_line_parses(self, engine: str):
        lines = [parse_line(raw, seq=n) for n, raw in enumerate(recorded(engine))]
        assert [x.raw for x in lines] == [None] * len(lines)
        assert [x.command for x in lines] == [
            "SET", "SET", "SELECT", "GET", "EVAL", "SET", "AUTH", "HELLO", "MSET", "PING",
            "ECHO", "HSET", "INFO", "SET", "SET",
        ]  # fmt: skip

    def test_escapes_come_back_as_the_bytes_that_were_sent(self, engine: str):
        line = parse_line(recorded(engine)[1], seq=1)
        assert line.args == ("sp ace", 'q"uo\\te\n\r\t\x00\x07\x08 é€')

    def test_db_client_and_time(self, engine: str):
        lines = [parse_line(raw, seq=0) for raw in recorded(engine)]
        assert lines[3].db == 3
        assert lines[0].db == 0
        assert lines[0].client is not None
        assert lines[0].client.startswith("127.0.0.1:")
        assert lines[5].client == "lua"
        assert lines[5].args == ("luakey", "luaval")
        assert lines[13].client is not None
        assert lines[13].client.startswith("unix:/")
        assert lines[14].client is not None
        assert lines[14].client.startswith("[::1]:")
        assert lines[0].ts is not None
        assert lines[0].ts_ms == int(float(lines[0].ts) * 1000)

    def test_the_engine_hides_credentials_itself(self, engine: str):
        lines = [parse_line(raw, seq=0) for raw in recorded(engine)]
        assert lines[6].args == (MARKER, MARKER)
        assert lines[7].args == ("2", "AUTH", MARKER, MARKER)

    def test_an_empty_argument_is_kept(self, engine: str):
        assert parse_line(recorded(engine)[10], seq=0).args == ("",)


class TestHostileLines:
    @pytest.mark.parametrize(
        "text",
        [
            pytest.param("", id="empty"),
            pytest.param("OK", id="no-header"),
            pytest.param("1.2 [0 127.0.0.1:1] SET k v", id="unquoted"),
            pytest.param('abc.def [0 x] "GET"', id="bad-time"),
            pytest.param('1.2 [x 127.0.0.1:1] "GET"', id="bad-db"),
            pytest.param("1.2 [0 127.0.0.1:1] ", id="no-command"),
            pytest.param("\x00\x01\xff" * 10, id="binary"),
        ],
    )
    def test_a_line_that_does_not_parse_is_kept_raw(self, text: str):
        line = parse_line(text.encode("latin-1"), seq=7)
        assert line.command is None
        assert line.seq == 7
        assert line.raw is not None
        assert "\x00" not in line.raw

    def test_an_unterminated_last_argument_is_dropped_not_fatal(self):
        assert parsed('1.2 [0 127.0.0.1:1] "SET" "k" "v') == ("SET", ("k",))

    def test_unknown_and_bad_escapes_are_kept_as_written(self):
        assert parsed(r'1.2 [0 c:1] "SET" "\q\xZZ\x4"')[1] == ("qxZZx4",)

    def test_non_utf8_bytes_show_as_hex(self):
        assert parsed(r'1.2 [0 c:1] "SET" "k" "\xff\xfe"')[1] == ("k", "\\xff\\xfe")

    def test_a_huge_line_keeps_bounded_arguments(self):
        text = '1.5 [0 c:1] "MSET" ' + " ".join(f'"{"x" * 5000}"' for _ in range(300))
        line = parse_line(text.encode(), seq=0)
        assert line.arg_count == 300
        assert len(line.args) == MAX_ARGS
        assert all(len(a) == MAX_ARG_CHARS + 1 and a.endswith("…") for a in line.args)
        assert line.shortened
        assert line.size == len(text)

    def test_a_cut_line_says_so(self):
        line = parse_line(b'1.5 [0 c:1] "SET" "k" "vvvv', seq=0, size=10**9, cut=True)
        assert line.shortened
        assert line.size == 10**9
        assert line.args == ("k",)

    def test_a_nul_in_a_command_or_address_cannot_reach_storage(self):
        line = parse_line(rb'1.2 [0 a\x00b] "G\x00ET"', seq=0)
        assert "\x00" not in (line.command or "")

    @given(st.binary(max_size=300))
    def test_any_bytes_parse_without_raising(self, data: bytes):
        line = parse_line(data, seq=0)
        assert (line.command is None) == (line.raw is not None)


class TestRedaction:
    @pytest.mark.parametrize(
        ("text", "kept"),
        [
            ('"SET" "user:1" "secret"', ("SET", ("user:1", MARKER))),
            ('"GET" "user:1"', ("GET", ("user:1",))),
            ('"HSET" "h" "f" "v"', ("HSET", ("h", MARKER, MARKER))),
            ('"MSET" "a" "1" "b" "2"', ("MSET", ("a", MARKER, "b", MARKER))),
            ('"DEL" "a" "b"', ("DEL", ("a", "b"))),
            ('"RENAME" "a" "b"', ("RENAME", ("a", "b"))),
            ('"EVAL" "return 1" "2" "k1" "k2" "arg"', ("EVAL", (MARKER, "2", "k1", "k2", MARKER))),
            ('"EVAL" "return 1" "x" "k1"', ("EVAL", (MARKER, MARKER, MARKER))),
            (
                '"ZUNIONSTORE" "d" "2" "a" "b" "WEIGHTS"',
                ("ZUNIONSTORE", ("d", "2", "a", "b", MARKER)),
            ),
            ('"PUBLISH" "chan" "message"', ("PUBLISH", (MARKER, MARKER))),
            ('"ECHO" "hello"', ("ECHO", (MARKER,))),
            ('"CLIENT" "SETNAME" "me"', ("CLIENT", ("SETNAME", MARKER))),
            ('"OBJECT" "ENCODING" "k"', ("OBJECT", ("ENCODING", "k"))),
            ('"INFO" "server"', ("INFO", ("server",))),
            ('"SELECT" "3"', ("SELECT", ("3",))),
            ('"AUTH" "(redacted)" "(redacted)"', ("AUTH", (MARKER, MARKER))),
            ('"MODULE.CMD" "key" "value"', ("MODULE.CMD", ("key", MARKER))),
        ],
    )
    def test_names_are_kept_and_values_replaced(self, text: str, kept: tuple[object, ...]):
        line = redact_line(parse_line(f"1.0 [0 127.0.0.1:9] {text}".encode(), seq=0))
        assert (line.command, line.args) == kept

    def test_an_unparsed_line_is_replaced_whole(self):
        line = redact_line(parse_line(b"garbage with a secret", seq=0))
        assert line.raw == UNPARSED

    @pytest.mark.parametrize("engine", ENGINES)
    def test_no_recorded_value_survives(self, engine: str):
        values = {b"v", b"value", b"luaval", b"a", b"b", b"v1", b"x", b"y", b"secretpw"}
        for raw in recorded(engine):
            line = redact_line(parse_line(raw, seq=0))
            assert not values & {a.encode() for a in line.args}, raw
