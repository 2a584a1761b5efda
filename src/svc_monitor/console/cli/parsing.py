"""The command line as redis-cli splits it: words, "double" and 'single' quotes.

Follows redis-cli's `sdssplitargs`: blanks (space, tab, CR, LF) separate words; inside
double quotes `\\n \\r \\t \\b \\a \\\\ \\"` and `\\xHH` are escapes; inside single quotes
only `\\'` is; a closing quote must be followed by a blank or the end of the line.
Each word becomes one element of the argument array sent to the server, so a line
`GET a\\r\\nFLUSHALL` is one GET with odd arguments, never two commands.

Refused before anything is sent: unbalanced quotes, a NUL (raw or `\\x00`: no command a
person types in a browser needs one, and C-string handling downstream could cut at it),
more than MAX_ARGS words, a line longer than MAX_LINE_CHARS (models.py).
"""

from svc_monitor.console.cli.models import MAX_LINE_CHARS

MAX_ARGS = 1000

_BLANKS = frozenset(" \t\r\n")
_HEX = frozenset("0123456789abcdefABCDEF")
_ESCAPES = {"n": b"\n", "r": b"\r", "t": b"\t", "b": b"\b", "a": b"\a"}


class CommandParseError(ValueError):
    """The line cannot be split into arguments; the message says why, for the user."""


def split_command(line: str) -> list[bytes]:
    """The arguments of one command line, as the bytes sent to the server."""
    if len(line) > MAX_LINE_CHARS:
        raise CommandParseError(
            f"the line is {len(line):,} characters long; at most {MAX_LINE_CHARS:,} are accepted"
        )
    if "\x00" in line:
        raise CommandParseError("the line contains a NUL character")
    words: list[bytes] = []
    i, end = 0, len(line)
    while True:
        while i < end and line[i] in _BLANKS:
            i += 1
        if i >= end:
            return words
        if len(words) == MAX_ARGS:
            raise CommandParseError(f"more than {MAX_ARGS:,} arguments")
        word, i = _word(line, i)
        words.append(word)


def _word(line: str, i: int) -> tuple[bytes, int]:
    """One word starting at `i`, and where the scan stopped."""
    out = bytearray()
    end = len(line)
    while i < end:
        char = line[i]
        if char in _BLANKS:
            return bytes(out), i
        if char == '"':
            i = _double_quoted(line, i + 1, out)
        elif char == "'":
            i = _single_quoted(line, i + 1, out)
        else:
            out += char.encode()
            i += 1
    return bytes(out), i


def _double_quoted(line: str, i: int, out: bytearray) -> int:
    end = len(line)
    while i < end:
        char = line[i]
        if char == "\\" and i + 1 < end:
            following = line[i + 1]
            if following == "x" and i + 3 < end and line[i + 2] in _HEX and line[i + 3] in _HEX:
                byte = int(line[i + 2 : i + 4], 16)
                if byte == 0:
                    raise CommandParseError("the line contains a NUL character (\\x00)")
                out.append(byte)
                i += 4
            else:
                out += _ESCAPES.get(following, following.encode())
                i += 2
        elif char == '"':
            return _closed(line, i + 1)
        else:
            out += char.encode()
            i += 1
    raise CommandParseError("unbalanced quotes: a double quote is never closed")


def _single_quoted(line: str, i: int, out: bytearray) -> int:
    end = len(line)
    while i < end:
        char = line[i]
        if char == "\\" and i + 1 < end and line[i + 1] == "'":
            out += b"'"
            i += 2
        elif char == "'":
            return _closed(line, i + 1)
        else:
            out += char.encode()
            i += 1
    raise CommandParseError("unbalanced quotes: a single quote is never closed")


def _closed(line: str, i: int) -> int:
    # redis-cli: a closing quote must be followed by a blank or the end of the line.
    if i < len(line) and line[i] not in _BLANKS:
        raise CommandParseError("a closing quote must be followed by a space or the end")
    return i


def quote_argument(argument: bytes) -> str:
    """A word that `split_command` reads back as `argument` (tests, and the docs' examples)."""
    if argument and all(0x21 <= b <= 0x7E and b not in b"\"'\\" for b in argument):
        return argument.decode("ascii")
    parts = ['"']
    for byte in argument:
        if byte in (0x22, 0x5C):
            parts.append("\\" + chr(byte))
        elif 0x20 <= byte <= 0x7E:
            parts.append(chr(byte))
        else:
            parts.append(f"\\x{byte:02x}")
    parts.append('"')
    return "".join(parts)
