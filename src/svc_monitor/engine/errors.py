"""What can go wrong on the wire to an instance, as errors that keep the server's words.

valkey-py strips the error code from some replies before raising (it turns
`-WRONGPASS invalid username-password pair` into AuthenticationError("invalid
username-password pair ...")). Users search for the code, so `translate` puts it back.
No message ever carries a credential: valkey-py's texts name host and port only.
"""

import asyncio
import ssl

from valkey import exceptions as vx


class EngineError(Exception):
    """A monitored instance could not answer; `kind` says why, `message` is for people."""

    kind = "error"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class EngineAuthError(EngineError):
    kind = "auth"


class PushStale(EngineError):
    """A push connection whose pushed fields have all gone stale (OTEL_METRICS_STALE_AFTER_MS)."""

    kind = "stale"


class EngineUnreachable(EngineError):
    kind = "unreachable"


class EngineTimeout(EngineError):
    kind = "timeout"


class EngineTlsError(EngineError):
    kind = "tls"


class EngineResponseError(EngineError):
    """The server answered with an error reply (`-ERR ...`, `-NOPERM ...`)."""

    kind = "response"


class EngineProtocolError(EngineError):
    kind = "protocol"


# Texts valkey-py leaves behind after cutting the code off, and the code they came with.
_AUTH_CODES = (
    ("invalid username-password pair", "WRONGPASS"),
    ("Authentication required", "NOAUTH"),
    ("invalid password", "WRONGPASS"),
)


def translate(
    exc: BaseException,
    *,
    address: str,
    timeout_s: float,
    connect_timeout_s: float | None = None,
    command_timeout_s: float | None = None,
) -> EngineError:
    """Map any exception raised while talking to `address` to an EngineError.

    `timeout_s` is the overall deadline; the connect and command timeouts, when given, name
    the limit that actually fired when valkey-py's own socket timeout ended the call.
    """
    if isinstance(exc, EngineError):
        return exc
    text = _text(exc)
    if isinstance(exc, vx.AuthenticationError | vx.AuthenticationWrongNumberOfArgsError):
        return EngineAuthError(_with_code(text))
    if isinstance(exc, vx.NoPermissionError):
        return EngineResponseError(text if text.startswith("NOPERM") else f"NOPERM {text}")
    if isinstance(exc, TimeoutError | asyncio.TimeoutError | vx.TimeoutError):
        return EngineTimeout(
            _timeout_message(exc, address, timeout_s, connect_timeout_s, command_timeout_s)
        )
    if _is_tls(exc):
        return EngineTlsError(f"TLS error talking to {address}: {text}")
    if isinstance(exc, vx.ResponseError):
        if text.startswith(("NOAUTH", "WRONGPASS")):
            return EngineAuthError(text)
        return EngineResponseError(text)
    if isinstance(exc, vx.ConnectionError | OSError):
        return EngineUnreachable(text or f"Cannot connect to {address}")
    if isinstance(exc, vx.DataError | vx.InvalidResponse):
        return EngineProtocolError(f"{address} did not answer like Valkey or Redis: {text}")
    return EngineError(text or type(exc).__name__)


def _timeout_message(
    exc: BaseException,
    address: str,
    deadline_s: float,
    connect_timeout_s: float | None,
    command_timeout_s: float | None,
) -> str:
    # valkey-py says "Timeout connecting to server" / "Timeout reading from ..."; our own
    # asyncio.timeout deadline raises the builtin TimeoutError with no text.
    text = str(exc)
    if isinstance(exc, vx.TimeoutError) and text.startswith("Timeout connecting"):
        if connect_timeout_s is not None:
            return f"Could not connect to {address} within {connect_timeout_s:g} s"
    elif isinstance(exc, vx.TimeoutError) and command_timeout_s is not None:
        return f"{address} did not answer within {command_timeout_s:g} s"
    return f"Timed out after {deadline_s:g} s talking to {address}"


def _text(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def _with_code(text: str) -> str:
    if text.split(" ", 1)[0].isupper() and text[:1].isalpha():
        return text  # already carries its code
    for fragment, code in _AUTH_CODES:
        if fragment in text:
            return f"{code} {text}"
    return text


def _is_tls(exc: BaseException) -> bool:
    seen: BaseException | None = exc
    for _ in range(5):  # the SSL error is often the cause of a ConnectionError
        if seen is None:
            return False
        if isinstance(seen, ssl.SSLError | ssl.CertificateError):
            return True
        seen = seen.__cause__ or seen.__context__
    return False
