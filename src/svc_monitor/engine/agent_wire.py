"""The agent link's frames, and the RESP framing both ends need
(docs/features/agent.md#the-link).

A link is one WebSocket from an agent to the service. Control messages are JSON text
frames (`hello`, `welcome`, `ping`, `pong`, `refused`); commands and replies are binary
frames, each a fixed header and RESP bytes:

    kind (1 byte) | session (u32) | request (u32) | payload

- COMMANDS (service to agent): one or more whole RESP commands of one session.
- REPLIES (agent to service): one reply per command of the request, in order.
- CLOSE (either way): the session ends; the payload is the reason, UTF-8.
- OPEN (service to agent, before a session's first commands): the session is to another
  node the agent's instance reports (`host:port`: a cluster node, a replica), not to the
  instance itself; the agent refuses (CLOSE) a node its instance does not report.

A session is one connection of the service's engine client; the agent gives each its own
connection to the instance, so replies of a session come back in the order sent.
"""

import struct
from dataclasses import dataclass
from enum import IntEnum

HEADER = struct.Struct(">BII")
# One request's commands or replies; larger replies (a big CLIENT LIST) are legal RESP but
# nothing svc-monitor reads is near this, and a peer that sends more is not one of ours.
MAX_PAYLOAD = 64 * 1024 * 1024


class Kind(IntEnum):
    COMMANDS = 1
    REPLIES = 2
    CLOSE = 3
    OPEN = 4


@dataclass(frozen=True, slots=True)
class Frame:
    kind: Kind
    session: int
    request: int
    payload: bytes


class WireError(ValueError):
    """A frame or RESP text that is not what the other end should send."""


def encode(kind: Kind, session: int, request: int, payload: bytes) -> bytes:
    return HEADER.pack(kind, session, request & 0xFFFFFFFF) + payload


def decode(data: bytes) -> Frame:
    if len(data) < HEADER.size:
        raise WireError("frame shorter than its header")
    kind, session, request = HEADER.unpack_from(data)
    try:
        known = Kind(kind)
    except ValueError:
        raise WireError(f"unknown frame kind {kind}") from None
    if len(data) - HEADER.size > MAX_PAYLOAD:
        raise WireError("frame payload over 64 MiB")
    return Frame(known, session, request, data[HEADER.size :])


def split_commands(
    buffer: bytes | bytearray, *, limit: int = 1024
) -> tuple[list[list[bytes]], int]:
    """The whole commands at the start of `buffer` (each a list of its arguments) and how
    many bytes they span; a partial command at the end is left for more bytes.

    Commands are RESP arrays of bulk strings, as every client library sends them; inline
    commands (plain text) are refused, since our engine client never sends them.
    """
    commands: list[list[bytes]] = []
    pos = 0
    size = len(buffer)
    while pos < size and len(commands) < limit:
        if buffer[pos] != 0x2A:  # "*"
            raise WireError("a command must be a RESP array of bulk strings")
        end = buffer.find(b"\r\n", pos)
        if end < 0:
            break
        count = _int(buffer, pos + 1, end)
        if count < 1 or count > 1024 * 1024:
            raise WireError("a command needs 1 to 1048576 arguments")
        cursor = end + 2
        args: list[bytes] = []
        for _ in range(count):
            if cursor >= size:
                break
            if buffer[cursor] != 0x24:  # "$"
                raise WireError("a command argument must be a bulk string")
            end = buffer.find(b"\r\n", cursor)
            if end < 0:
                break
            length = _int(buffer, cursor + 1, end)
            if length < 0 or length > MAX_PAYLOAD:
                raise WireError("bad argument length")
            start = end + 2
            if start + length + 2 > size:
                break
            args.append(bytes(buffer[start : start + length]))
            cursor = start + length + 2
        if len(args) < count:
            break
        commands.append(args)
        pos = cursor
    return commands, pos


def pack_command(args: list[bytes]) -> bytes:
    parts = [b"*%d\r\n" % len(args)]
    for arg in args:
        parts.append(b"$%d\r\n%s\r\n" % (len(arg), arg))
    return b"".join(parts)


def error_reply(message: str) -> bytes:
    """A RESP error; line breaks in `message` would end it early, so they go."""
    flat = message.replace("\r", " ").replace("\n", " ")
    return b"-" + flat.encode("utf-8", "replace") + b"\r\n"


def reply_end(buffer: bytes | bytearray, pos: int) -> int:
    """Where the whole reply starting at `pos` ends; -1 while it is not all there.

    RESP2 and the RESP3 types, read by their lengths, so a large bulk reply (INFO, CLIENT
    LIST) costs a few slices whatever its size."""
    size = len(buffer)
    pending = 1  # replies still to skip, nested aggregates included
    while pending:
        if pos >= size:
            return -1
        kind = buffer[pos]
        end = buffer.find(b"\r\n", pos)
        if end < 0:
            return -1
        pending -= 1
        if kind in _LINE:
            pos = end + 2
        elif kind in _BULK:
            length = _int(buffer, pos + 1, end)
            pos = end + 2 if length < 0 else end + 2 + length + 2
        elif kind in _AGGREGATE:
            count = _int(buffer, pos + 1, end)
            if count > 0:
                pending += count * (2 if kind in _PAIRS else 1)
            pos = end + 2
        else:
            raise WireError(f"unknown RESP type {chr(kind)!r}")
    return pos if pos <= size else -1


_LINE = frozenset(b"+-:_,#(")
_BULK = frozenset(b"$!=")
_AGGREGATE = frozenset(b"*~>%|")
_PAIRS = frozenset(b"%|")


def _int(buffer: bytes | bytearray, start: int, end: int) -> int:
    try:
        return int(buffer[start:end])
    except ValueError:
        raise WireError("bad RESP length") from None
