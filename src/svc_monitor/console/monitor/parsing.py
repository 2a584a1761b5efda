r"""MONITOR output lines, parsed. A pure function of the bytes: no I/O, never raises on content.

What the engines write (Valkey 9.1 and Redis 7.0 alike, recorded in
tests/console/replies/), one simple-string reply per executed command:

    1700000000.123456 [0 127.0.0.1:5555] "SET" "k" "v"
    1700000000.123500 [3 lua] "SET" "luakey" "luaval"
    1700000000.123600 [0 unix:/run/valkey.sock] "GET" "k"
    1700000000.123700 [0 [::1]:44350] "GET" "k"

Every argument is quoted by the server's `sdscatrepr`: `\\` `\"` `\n` `\r` `\t` `\a` `\b`
escaped by name, and any other unprintable byte (non-ASCII bytes included) as `\xNN`, so
the wire text is printable ASCII and the argument's bytes come back exactly. Those bytes are
shown as UTF-8 where they are UTF-8, with `\xNN` for the rest.

Sizes are bounded here: at most MAX_ARGS arguments of at most MAX_ARG_CHARS characters are
kept (and `shortened` says so); `arg_count` still counts every argument the line carried.
A line that does not look like the above is kept as text in `raw` (cut to MAX_RAW_CHARS).
"""

import re

from svc_monitor.console.monitor.models import MonitorLine

MAX_ARGS = 100
MAX_ARG_CHARS = 1000
MAX_RAW_CHARS = 4000
ELLIPSIS = "…"

# "seconds.micros [db client] " then the first quoted argument. The client part is
# matched lazily up to the first `] "`, which leaves IPv6 addresses ("[::1]:5555") whole.
_HEAD = re.compile(r'(\d{1,12})\.(\d{1,9}) \[(\d{1,10}) (.{0,300}?)\] (?=")')
# One quoted argument (the unrolled form of `"(?:[^"\\]|\\.)*"`, linear on any input).
_ARG = re.compile(r'"([^"\\]*(?:\\.[^"\\]*)*)"')
_ESCAPE = re.compile(r"\\(x[0-9a-fA-F]{2}|.)", re.DOTALL)
_NAMED = {"n": "\n", "r": "\r", "t": "\t", "a": "\a", "b": "\b", '"': '"', "\\": "\\"}


def parse_line(data: bytes, *, seq: int, size: int | None = None, cut: bool = False) -> MonitorLine:
    """One line (without the leading `+` and the CRLF). `cut`: `data` is only the head of a
    longer line of `size` bytes, whose last argument may be incomplete."""
    total = len(data) if size is None else size
    # latin-1 maps every byte to one character, so this never fails and loses nothing.
    text = data.decode("latin-1")
    head = _HEAD.match(text)
    if head is None:
        return _unparsed(text, seq=seq, size=total, cut=cut)
    quoted = _ARG.findall(text, head.end())
    if not quoted:
        return _unparsed(text, seq=seq, size=total, cut=cut)
    seconds, fraction, db, client = head.groups()
    shortened = cut or len(quoted) - 1 > MAX_ARGS
    args: list[str] = []
    for item in quoted[1 : MAX_ARGS + 1]:
        value = _unescape(item)
        if len(value) > MAX_ARG_CHARS:
            value = value[:MAX_ARG_CHARS] + ELLIPSIS
            shortened = True
        args.append(value)
    return MonitorLine(
        seq=seq,
        ts=f"{seconds}.{fraction}",
        ts_ms=int(seconds) * 1000 + int(fraction.ljust(3, "0")[:3]),
        db=int(db),
        client=_no_nul(client),
        command=_no_nul(_unescape(quoted[0])[:64].upper()),
        args=tuple(args),
        arg_count=len(quoted) - 1,
        shortened=shortened,
        raw=None,
        size=total,
    )


def _unparsed(text: str, *, seq: int, size: int, cut: bool) -> MonitorLine:
    shortened = cut or len(text) > MAX_RAW_CHARS
    raw = _no_nul(text[:MAX_RAW_CHARS]) + (ELLIPSIS if shortened else "")
    return MonitorLine(
        seq=seq,
        ts=None,
        ts_ms=None,
        db=None,
        client=None,
        command=None,
        args=(),
        arg_count=0,
        shortened=shortened,
        raw=raw,
        size=size,
    )


def _unescape(quoted: str) -> str:
    if "\\" not in quoted:
        return quoted
    text = _ESCAPE.sub(_replace, quoted)
    if "\\x" not in quoted:
        return text
    # \xNN escapes are bytes: a UTF-8 value arrives as several of them.
    return text.encode("latin-1").decode("utf-8", errors="backslashreplace")


def _no_nul(text: str) -> str:
    # PostgreSQL refuses NUL in text columns; only a hostile server would send one here.
    return text.replace("\x00", "\\x00") if "\x00" in text else text


def _replace(match: re.Match[str]) -> str:
    escape = match.group(1)
    if len(escape) == 3:
        return chr(int(escape[1:], 16))
    return _NAMED.get(escape, escape)
