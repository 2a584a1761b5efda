"""Which storage errors mean "storage cannot take this now" rather than a bug, and why.

The driver errors of an outage (PostgreSQL killed or restarting, a pool that cannot
connect, a SQLite file on a full disk or a read-only mount) are answered 503 with
Retry-After, and make /health report storage `degraded` while writes fail. Anything else
a driver raises (a constraint, a malformed statement) is a bug or a conflict, not this.
Reasons are fixed words, never the driver's text: that can quote a statement and its
parameters.
"""

import errno
import sqlite3
from dataclasses import dataclass

from sqlalchemy import exc as sa

_FULL = ("database or disk is full", "disk full", "no space left")
_READ_ONLY = ("readonly", "read-only", "read only")


def outage_reason(error: BaseException) -> str | None:
    """ "full", "read-only" or "unavailable" when `error` is storage unable to serve;
    None for any other error."""
    cause: BaseException = (error.orig or error) if isinstance(error, sa.DBAPIError) else error
    state = _sqlstate(error) or _sqlstate(cause) or _sqlstate(cause.__cause__)
    if state is not None:
        # PostgreSQL's classes: 53100 disk full, 25006 a read-only transaction, 08 the
        # connection, 57 the server shutting down or starting up (the driver raises
        # those while connecting, unwrapped).
        if state == "53100":
            return "full"
        if state == "25006":
            return "read-only"
        if state.startswith(("08", "57", "53")):
            return "unavailable"
    text = str(cause).lower()
    no_space = isinstance(cause, OSError) and cause.errno == errno.ENOSPC
    if no_space or any(s in text for s in _FULL):
        return "full"
    if any(s in text for s in _READ_ONLY) and isinstance(
        cause, (sqlite3.OperationalError, OSError, sa.OperationalError)
    ):
        return "read-only"
    if isinstance(error, (sa.OperationalError, sa.InterfaceError, sa.DisconnectionError)):
        return "unavailable"
    if isinstance(error, sa.TimeoutError | ConnectionError | TimeoutError):
        return "unavailable"  # the pool found no connection in time; refused; timed out
    if isinstance(error, sa.DBAPIError) and error.connection_invalidated:
        return "unavailable"
    if isinstance(error, OSError) and error.errno in (errno.ECONNREFUSED, errno.ECONNRESET):
        return "unavailable"
    return None


# A success clears a failure only this long after the last one: on a full disk reads (and
# transactions that write nothing) still succeed between the failing writes.
CLEARS_AFTER_MS = 5000


@dataclass(slots=True)
class WriteHealth:
    """Whether storage is taking writes: what /health reports as storage `degraded`."""

    failing_since_ms: int | None = None
    last_failure_ms: int | None = None
    reason: str | None = None

    def failed(self, reason: str, at_ms: int) -> None:
        if self.failing_since_ms is None:
            self.failing_since_ms = at_ms
        self.last_failure_ms = at_ms
        self.reason = reason

    def succeeded(self, at_ms: int) -> None:
        if self.last_failure_ms is not None and at_ms - self.last_failure_ms >= CLEARS_AFTER_MS:
            self.failing_since_ms = self.last_failure_ms = self.reason = None


def _sqlstate(error: BaseException | None) -> str | None:
    state = getattr(error, "sqlstate", None) if error is not None else None
    return state if isinstance(state, str) else None
