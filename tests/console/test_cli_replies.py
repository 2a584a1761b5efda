"""Replies written as redis-cli prints them (its cliFormatReplyTTY), and cut at a cap."""

import pytest
from valkey import exceptions as vx

from svc_monitor.console.cli.policy import Kind
from svc_monitor.console.cli.replies import TRUNCATED_NOTE, error_text, format_reply
from svc_monitor.engine.errors import EngineResponseError


def shown(reply: object, name: str = "GET", kind: Kind = Kind.READ, args: int = 1, **kw):
    formatted = format_reply(reply, name=name, kind=kind, args=args, **kw)
    return formatted.text, formatted.result_type


class TestScalars:
    @pytest.mark.parametrize(
        ("reply", "text", "kind"),
        [
            (b"bar", '"bar"', "string"),
            (b"", '""', "string"),
            (b'say "hi"\\', '"say \\"hi\\"\\\\"', "string"),
            (b"\n\r\t\x07\x08", '"\\n\\r\\t\\a\\b"', "string"),
            ("€".encode(), '"\\xe2\\x82\\xac"', "string"),
            (b"\x00\xff", '"\\x00\\xff"', "string"),
            (42, "(integer) 42", "integer"),
            (-1, "(integer) -1", "integer"),
            (None, "(nil)", "nil"),
            ([], "(empty array)", "empty-array"),
        ],
    )
    def test_scalars(self, reply: object, text: str, kind: str):
        assert shown(reply) == (text, kind)

    def test_simple_string_replies_print_bare(self):
        assert shown(b"PONG", name="PING", args=0) == ("PONG", "status")
        assert shown(b"hello", name="PING", args=1) == ('"hello"', "string")
        assert shown(b"list", name="TYPE") == ("list", "status")
        assert shown(b"OK", name="SET", kind=Kind.WRITE, args=2) == ("OK", "status")
        assert shown(b"OK", name="GET") == ('"OK"', "string")  # a value that reads OK

    def test_reports_print_raw(self):
        info = b"# Server\r\nredis_version:7.2.4\r\nprocess_id:1\r\n"
        assert shown(info, name="INFO", args=0) == (
            "# Server\nredis_version:7.2.4\nprocess_id:1",
            "string",
        )


class TestArrays:
    def test_a_flat_array_is_numbered(self):
        assert shown([b"a", b"b"]) == ('1) "a"\n2) "b"', "array")

    def test_numbers_are_right_aligned_past_nine(self):
        text, _ = shown([str(i).encode() for i in range(1, 11)])
        lines = text.splitlines()
        assert lines[0] == ' 1) "1"'
        assert lines[9] == '10) "10"'

    def test_nested_arrays_line_up_under_their_parent(self):
        reply = [[b"1-1", [b"a", b"1", b"b", b"2"]], [b"1-2", []], None, 7]
        assert shown(reply, name="XRANGE")[0] == "\n".join(
            [
                '1) 1) "1-1"',
                '   2) 1) "a"',
                '      2) "1"',
                '      3) "b"',
                '      4) "2"',
                '2) 1) "1-2"',
                "   2) (empty array)",
                "3) (nil)",
                "4) (integer) 7",
            ]
        )

    def test_an_error_inside_an_array(self):
        text, _ = shown([b"ok", vx.ResponseError("WRONGTYPE Operation against a key")])
        assert text == '1) "ok"\n2) (error) WRONGTYPE Operation against a key'


class TestCap:
    def test_a_long_string_is_cut_with_a_note(self):
        formatted = format_reply(b"x" * 5000, name="GET", kind=Kind.READ, args=1, cap=1000)
        assert formatted.truncated
        assert formatted.text == '"' + "x" * 999 + "\n" + TRUNCATED_NOTE

    def test_a_long_array_stops_early(self):
        reply = [b"v"] * 1_000_000
        formatted = format_reply(reply, name="LRANGE", kind=Kind.READ, args=3, cap=100)
        assert formatted.truncated
        assert formatted.text.startswith('      1) "v"\n      2) "v"\n')
        assert len(formatted.text) <= 100 + 1 + len(TRUNCATED_NOTE)

    def test_a_reply_that_fits_is_whole(self):
        formatted = format_reply([b"a"], name="LRANGE", kind=Kind.READ, args=3, cap=100)
        assert not formatted.truncated
        assert TRUNCATED_NOTE not in formatted.text


class TestErrors:
    @pytest.mark.parametrize(
        ("error", "text"),
        [
            # valkey-py cuts "ERR " off generic errors; redis-cli shows it.
            (vx.ResponseError("unknown command 'FOO'"), "ERR unknown command 'FOO'"),
            (vx.ResponseError("WRONGTYPE Operation"), "WRONGTYPE Operation"),
            (vx.ReadOnlyError("You can't write against a read only replica."), "READONLY You"),
            (vx.NoScriptError("No matching script."), "NOSCRIPT No matching script."),
        ],
    )
    def test_error_codes_are_shown_as_the_server_sent_them(self, error: Exception, text: str):
        assert error_text(error).startswith(text)

    def test_an_engine_error_keeps_the_code_of_what_it_translated(self):
        def translated() -> None:
            try:
                raise vx.ReadOnlyError("You can't write against a read only replica.")
            except vx.ResponseError:
                # What EngineClient does: `raise translate(exc) from None` keeps the context.
                raise EngineResponseError("You can't write against a read only replica.") from None

        with pytest.raises(EngineResponseError) as caught:
            translated()
        assert error_text(caught.value) == "READONLY You can't write against a read only replica."
