"""The CLI's tokenizer splits a line as redis-cli does, and refuses what it must."""

import pytest
from hypothesis import given, strategies as st

from svc_monitor.console.cli.models import MAX_LINE_CHARS
from svc_monitor.console.cli.parsing import (
    MAX_ARGS,
    CommandParseError,
    quote_argument,
    split_command,
)


class TestSplitting:
    @pytest.mark.parametrize(
        ("line", "words"),
        [
            ("GET foo", [b"GET", b"foo"]),
            ("  get   foo  ", [b"get", b"foo"]),
            ("", []),
            ("   \t ", []),
            ('SET k "two words"', [b"SET", b"k", b"two words"]),
            ("SET k 'two words'", [b"SET", b"k", b"two words"]),
            ('SET k "a\\"b\\\\c"', [b"SET", b"k", b'a"b\\c']),
            ('SET k "\\n\\r\\t\\b\\a"', [b"SET", b"k", b"\n\r\t\b\a"]),
            ('SET k "\\xe2\\x82\\xac"', [b"SET", b"k", "€".encode()]),
            ('SET k "\\xZZ"', [b"SET", b"k", b"xZZ"]),
            ("SET k 'it\\'s'", [b"SET", b"k", b"it's"]),
            ("SET k 'no \\n escapes'", [b"SET", b"k", b"no \\n escapes"]),
            ('SET k ""', [b"SET", b"k", b""]),
            ('SET k ab"c d"', [b"SET", b"k", b"abc d"]),
            ("SET k €", [b"SET", b"k", "€".encode()]),
            ("GET a\r\nFLUSHALL", [b"GET", b"a", b"FLUSHALL"]),
        ],
    )
    def test_lines_split_like_redis_cli(self, line: str, words: list[bytes]):
        assert split_command(line) == words


class TestRefusals:
    @pytest.mark.parametrize(
        ("line", "why"),
        [
            ('GET "open', "a double quote is never closed"),
            ("GET 'open", "a single quote is never closed"),
            ('GET "a"b', "a closing quote must be followed by a space or the end"),
            ("GET 'a'b", "a closing quote must be followed by a space or the end"),
            ("GET a\x00b", "NUL"),
            ('GET "a\\x00"', "NUL"),
            ('GET "ends with a backslash\\', "a double quote is never closed"),
        ],
    )
    def test_malformed_lines_are_refused(self, line: str, why: str):
        with pytest.raises(CommandParseError, match=why):
            split_command(line)

    def test_at_most_a_thousand_arguments(self):
        assert len(split_command("MGET " + "k " * (MAX_ARGS - 1))) == MAX_ARGS
        with pytest.raises(CommandParseError, match="more than 1,000 arguments"):
            split_command("MGET " + "k " * MAX_ARGS)

    def test_an_over_long_line_is_refused_before_it_is_read(self):
        assert split_command("GET " + "k" * (MAX_LINE_CHARS - 4)) != []
        with pytest.raises(CommandParseError, match="characters long"):
            split_command("GET " + "k" * (MAX_LINE_CHARS - 3))


@given(st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\x00", b"0")), max_size=8))
def test_quoted_arguments_split_back_to_themselves(arguments: list[bytes]):
    line = " ".join(quote_argument(a) for a in arguments)
    assert split_command(line) == arguments


@given(st.text(max_size=200))
def test_any_line_splits_or_is_refused_cleanly(line: str):
    try:
        words = split_command(line)
    except CommandParseError:
        return
    assert all(isinstance(w, bytes) and b"\x00" not in w for w in words)
