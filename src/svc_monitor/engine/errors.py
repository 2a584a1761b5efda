"""What can go wrong on the wire to an instance, as errors that keep the server's words.

valkey-py strips the error code from some replies before raising (it turns
`-WRONGPASS invalid username-password pair` into AuthenticationError("invalid
username-password pair ...")). Users search for the code, so `translate` puts it back.
No message ever carries a credential: valkey-py's texts name host and port only.

`reason` narrows a kind down for the hints a connection test shows (connections/hints.py):
"refused", "closed", "dns", "untrusted", "hostname", "expired", "not_tls",
"client_cert_required", "client_cert_refused", "tls_handshake_timeout", "setup".
"""

import asyncio
import socket
import ssl
import types

from valkey import exceptions as vx


class EngineError(Exception):
    """A monitored instance could not answer; `kind` says why, `message` is for people."""

    kind = "error"

    def __init__(self, message: str, *, reason: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.reason = reason


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


class SshTunnelError(EngineError):
    """The SSH tunnel in front of an instance failed; the message names the bastion host:port.

    Raised by engine/ssh_tunnel.py; `translate` finds it again when valkey-py wraps it.
    """

    kind = "ssh"


class AgentNotLinked(EngineError):
    """An agent connection whose agent has no link to the service now (never dialled in,
    stopped, cut off, or its token revoked): docs/features/agent.md."""

    kind = "agent"


class SshUnreachable(SshTunnelError):
    kind = "ssh_unreachable"


class SshTimeout(SshTunnelError):
    kind = "ssh_timeout"


class SshAuthFailed(SshTunnelError):
    kind = "ssh_auth"


class SshKeyError(SshTunnelError):
    """The private key could not be read or decrypted (never quoted: it is a secret)."""

    kind = "ssh_key"


class SshHostKeyMismatch(SshTunnelError):
    """The bastion presented a host key other than the pinned one; refused before login."""

    kind = "ssh_host_key"

    def __init__(self, message: str, *, expected: str, presented: str) -> None:
        super().__init__(message)
        self.expected = expected
        self.presented = presented


class TlsHandshakeTimeout(Exception):
    """The TCP connection opened but the TLS handshake got no answer in time: what a TLS
    client meets on a plain port of Redis 7.0, which waits for the end of an inline command
    that never comes (engine/dial.py raises it; `translate` names it)."""

    def __init__(self, timeout_s: float) -> None:
        super().__init__(f"TLS handshake got no answer within {timeout_s:g} s")
        self.timeout_s = timeout_s


# OpenSSL's X509_V_ERR_* codes (include/openssl/x509_vfy.h) as ssl.SSLCertVerificationError
# carries them in verify_code.
_VERIFY_REASONS = {
    2: "untrusted",  # unable to get issuer certificate
    9: "expired",  # certificate is not yet valid
    10: "expired",  # certificate has expired
    18: "untrusted",  # self-signed certificate
    19: "untrusted",  # self-signed certificate in certificate chain
    20: "untrusted",  # unable to get local issuer certificate
    21: "untrusted",  # unable to verify the first certificate
    62: "hostname",  # hostname mismatch
    64: "hostname",  # IP address mismatch
}
# Alerts and record errors as ssl.SSLError.reason spells them.
_SSL_REASONS = (
    ("CERTIFICATE_REQUIRED", "client_cert_required"),
    ("UNKNOWN_CA", "client_cert_refused"),
    ("BAD_CERTIFICATE", "client_cert_refused"),
    ("CERTIFICATE_UNKNOWN", "client_cert_refused"),
    ("WRONG_VERSION_NUMBER", "not_tls"),
    ("RECORD_LAYER_FAILURE", "not_tls"),
    ("PACKET_LENGTH_TOO_LONG", "not_tls"),
    ("HTTP_REQUEST", "not_tls"),
)


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
    inner = _in_chain(exc, EngineError)  # e.g. a tunnel's own error, wrapped by valkey-py
    if isinstance(inner, EngineError):
        return inner
    error = _translate(exc, address, timeout_s, connect_timeout_s, command_timeout_s)
    if error.reason is None:
        error.reason = _reason(exc)
    return error


def _translate(
    exc: BaseException,
    address: str,
    timeout_s: float,
    connect_timeout_s: float | None,
    command_timeout_s: float | None,
) -> EngineError:
    text = _text(exc)
    handshake = _in_chain(exc, TlsHandshakeTimeout)
    if isinstance(handshake, TlsHandshakeTimeout):
        return EngineTimeout(
            f"TLS handshake with {address} got no answer within {handshake.timeout_s:g} s",
            reason="tls_handshake_timeout",
        )
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
    return _in_chain(exc, ssl.SSLError | ssl.CertificateError) is not None


def _in_chain(exc: BaseException, kind: type | types.UnionType) -> BaseException | None:
    seen: BaseException | None = exc
    for _ in range(5):  # the real error is often the cause of a ConnectionError
        if seen is None:
            return None
        if isinstance(seen, kind):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def _reason(exc: BaseException) -> str | None:
    """What the chain of `exc` says went wrong, in the words of the module docstring."""
    verify = _in_chain(exc, ssl.SSLCertVerificationError)
    if isinstance(verify, ssl.SSLCertVerificationError):
        return _VERIFY_REASONS.get(verify.verify_code, "untrusted")
    tls = _in_chain(exc, ssl.SSLError)
    if isinstance(tls, ssl.SSLError):
        code = str(tls.reason or "")
        return next((r for fragment, r in _SSL_REASONS if fragment in code), None)
    if _in_chain(exc, ConnectionRefusedError) is not None:
        return "refused"
    if _in_chain(exc, socket.gaierror) is not None:
        return "dns"
    closed = ConnectionResetError | BrokenPipeError | ConnectionAbortedError
    if _in_chain(exc, closed | asyncio.IncompleteReadError) is not None:
        return "closed"
    if isinstance(exc, vx.ConnectionError) and "closed by server" in str(exc):
        return "closed"
    return None
