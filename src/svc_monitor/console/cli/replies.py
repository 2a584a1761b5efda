"""Replies written the way redis-cli prints them in a terminal.

`"text"` for strings (escaped like redis-cli: `\\n`, `\\"`, `\\xHH` for any byte outside
printable ASCII), `(integer) 3`, `(nil)`, `(empty array)`, numbered lists with nested
lists indented under their number, `(error) ...`. INFO, CLUSTER NODES, LATENCY DOCTOR and
the other reports redis-cli prints raw are shown raw, line by line.

valkey-py hands simple-string (`+OK`) and bulk-string replies over alike, as bytes; the
commands whose reply is a simple string are known (`STATUS_REPLIES`, and `OK` from any
write), so those print bare (`OK`, `PONG`, `string`) as in redis-cli.

Output stops at OUTPUT_CAP characters with a note: building the text of a huge reply
(`LRANGE k 0 -1` on a million elements) would cost the server's memory and the browser's.
"""

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from valkey import exceptions as vx

from svc_monitor.console.cli.policy import Kind
from svc_monitor.engine.errors import EngineError

OUTPUT_CAP = 512 * 1024
TRUNCATED_NOTE = "(output truncated: only the first 512 KiB of the reply is shown)"

# What redis-cli prints raw rather than quoted (its cliSendCommand list).
RAW_OUTPUT = frozenset(
    {
        "INFO", "MEMORY DOCTOR", "MEMORY MALLOC-STATS", "CLUSTER NODES", "CLUSTER INFO",
        "CLIENT LIST", "CLIENT INFO", "LATENCY DOCTOR", "LATENCY GRAPH", "LOLWUT",
    }
)  # fmt: skip
# Commands whose reply is a simple string (`+...`), beyond `+OK` from any write.
STATUS_REPLIES = frozenset({"TYPE", "BGSAVE", "BGREWRITEAOF", "CLUSTER MYID"})
_PLAIN = re.compile(rb"[\x20\x21\x23-\x5b\x5d-\x7e]*")
_REPR = [
    {
        0x5C: "\\\\",
        0x22: '\\"',
        0x0A: "\\n",
        0x0D: "\\r",
        0x09: "\\t",
        0x07: "\\a",
        0x08: "\\b",
    }.get(b, chr(b) if 0x20 <= b <= 0x7E else f"\\x{b:02x}")
    for b in range(256)
]
# valkey-py cuts these codes off the error text before raising; redis-cli shows them.
_ERROR_CODES: tuple[tuple[type[Exception], str], ...] = (
    (vx.OutOfMemoryError, "OOM"),
    (vx.ExecAbortError, "EXECABORT"),
    (vx.NoScriptError, "NOSCRIPT"),
    (vx.ReadOnlyError, "READONLY"),
)


@dataclass(frozen=True, slots=True)
class Formatted:
    """A reply as text, the kind of reply it was, and whether the text was cut short."""

    text: str
    result_type: str  # string | integer | array | nil | error | empty-array | status
    truncated: bool


class _Full(Exception):
    pass


def format_reply(
    reply: Any, *, name: str, kind: Kind, args: int, cap: int = OUTPUT_CAP
) -> Formatted:
    """`reply` as redis-cli shows it after running `name` with `args` arguments."""
    if isinstance(reply, bytes | str) and _is_status(reply, name=name, kind=kind, args=args):
        return _capped(iter([_text(reply)]), "status", cap)
    if isinstance(reply, bytes | str) and name in RAW_OUTPUT:
        raw = _text(reply).replace("\r\n", "\n").rstrip("\n")
        return _capped(iter([raw]), "string", cap)
    return _capped(_lines(reply, ""), _type_of(reply), cap)


def format_error(error: BaseException) -> str:
    """An error reply as redis-cli prints it: `(error) ERR unknown command ...`."""
    return f"(error) {error_text(error)}"


def error_text(error: BaseException) -> str:
    """The server's error with its code (`ERR`, `WRONGTYPE` ...) in front, as it was sent."""
    message = error.message if isinstance(error, EngineError) else str(error)
    message = " ".join(message.split())
    source = error.__context__ if isinstance(error, EngineError) else error
    for cls, code in _ERROR_CODES:
        if isinstance(source, cls):
            return f"{code} {message}"
    first = message.split(" ", 1)[0]
    if first.isupper() and first.isalpha() and len(first) > 1:
        return message  # it kept its code (WRONGTYPE, NOPERM, MOVED ...)
    return f"ERR {message}"


def _is_status(reply: bytes | str, *, name: str, kind: Kind, args: int) -> bool:
    if name == "PING":
        return args == 0  # PING with a message echoes it as a bulk string
    if name in STATUS_REPLIES:
        return True
    return kind is Kind.WRITE and reply in (b"OK", "OK")


def _type_of(reply: Any) -> str:
    if reply is None:
        return "nil"
    if isinstance(reply, bool | int):
        return "integer"
    if isinstance(reply, list | tuple):
        return "array" if reply else "empty-array"
    if isinstance(reply, BaseException):
        return "error"
    return "string"


def _lines(reply: Any, prefix: str) -> Iterator[str]:
    """redis-cli's cliFormatReplyTTY as pieces of text, so a cap can stop it early."""
    if reply is None:
        yield "(nil)\n"
    elif isinstance(reply, bool):
        yield f"(integer) {int(reply)}\n"
    elif isinstance(reply, int):
        yield f"(integer) {reply}\n"
    elif isinstance(reply, float):
        yield f"(double) {reply!r}\n"
    elif isinstance(reply, bytes):
        yield _repr(reply)
        yield "\n"
    elif isinstance(reply, str):
        yield _repr(reply.encode())
        yield "\n"
    elif isinstance(reply, BaseException):
        yield format_error(reply) + "\n"
    elif isinstance(reply, list | tuple):
        yield from _array(reply, prefix)
    elif isinstance(reply, dict):  # RESP3 maps, should a client ever hand one over
        yield from _array([x for pair in reply.items() for x in pair], prefix)
    else:
        yield f"{reply}\n"


def _array(items: list[Any] | tuple[Any, ...], prefix: str) -> Iterator[str]:
    if not items:
        yield "(empty array)\n"
        return
    width = len(str(len(items)))
    # Nested lists line up under their parent's first element: the prefix grows by the
    # index width plus ") ".
    inner = prefix + " " * (width + 2)
    for index, item in enumerate(items, 1):
        yield f"{'' if index == 1 else prefix}{index:>{width}}) "
        yield from _lines(item, inner)


def _text(reply: bytes | str) -> str:
    # Every character counts against the cap, so more than it is never decoded.
    head = reply[: OUTPUT_CAP + 1]
    return head.decode("utf-8", errors="replace") if isinstance(head, bytes) else head


def _repr(data: bytes) -> str:
    """redis-cli's sdscatrepr: the bytes in double quotes, escaped."""
    # Each byte becomes at least one character: more than the cap is never escaped.
    data = data[: OUTPUT_CAP + 1]
    if _PLAIN.fullmatch(data):
        return f'"{data.decode("ascii")}"'
    return '"' + "".join([_REPR[b] for b in data]) + '"'


def _capped(pieces: Iterator[str], result_type: str, cap: int) -> Formatted:
    parts: list[str] = []
    size = 0
    truncated = False
    try:
        for piece in pieces:
            if size + len(piece) > cap:
                parts.append(piece[: cap - size])
                raise _Full
            parts.append(piece)
            size += len(piece)
    except _Full:
        truncated = True
    text = "".join(parts).rstrip("\n")
    if truncated:
        text += "\n" + TRUNCATED_NOTE
    return Formatted(text, result_type, truncated)
