"""What one CLI command comes to, and the ways a CLI session ends."""

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class CommandResult:
    """The server answered (an error reply included): its reply as redis-cli prints it."""

    text: str
    result_type: str  # string | integer | array | nil | error | empty-array | status
    duration_ms: float
    truncated: bool


@dataclass(frozen=True, slots=True)
class CommandRefused:
    """Nothing reached the server, or no reply came back: why, for the user."""

    message: str


class SessionClosed(Exception):
    """The socket must close: `code` is its WebSocket close code, `message` says why."""

    def __init__(self, message: str, *, code: int) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


# WebSocket close codes the CLI uses besides 1000 (normal) and 1009 (frame too big, sent
# by the protocol layer).
# A browser CLI line, not a bulk loader: 64 Ki characters holds any command a person types,
# and bounds the UTF-8 arguments built from it at 256 KiB (parsing.py).
MAX_LINE_CHARS = 64 * 1024
CLOSE_POLICY = 1008  # the session ended, or too many CLI sockets are open for this user
CLOSE_UNKNOWN_CONNECTION = 4404  # the connectionId names no connection
# its stored password cannot be decrypted, or it is a push connection (no commands sent)
CLOSE_UNUSABLE_CONNECTION = 4409
