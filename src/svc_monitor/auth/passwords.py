"""Password hashing (argon2id) and the rules a new password must meet.

argon2-cffi's defaults are RFC 9106's low-memory profile (t=3, m=64 MiB, p=4), above
OWASP's floor (m=19 MiB, t=2). Hashing takes tens of milliseconds, so it runs on a
thread, and a length cap applies before hashing so a megabyte "password" costs nothing.
"""

import functools

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from svc_monitor.errors import Unprocessable
from svc_monitor.kit.gil_handover import to_thread

MIN_PASSWORD_LENGTH = 8
MAX_PASSWORD_LENGTH = 256  # characters; long passphrases fit, a hash-DoS payload does not

_hasher = PasswordHasher()


def check_new_password(password: str, *, field: str = "password") -> None:
    if len(password) < MIN_PASSWORD_LENGTH:
        raise Unprocessable(
            f"{field} must be at least {MIN_PASSWORD_LENGTH} characters", field=field
        )
    if len(password) > MAX_PASSWORD_LENGTH:
        raise Unprocessable(
            f"{field} must be at most {MAX_PASSWORD_LENGTH} characters", field=field
        )


async def hash_password(password: str) -> str:
    return await to_thread(_hasher.hash, password)


async def password_matches(stored_hash: str | None, password: str) -> bool:
    """Whether `password` is right; with no stored hash (unknown account, or one that signs
    in only through the broker) a dummy hash is checked, so the answer takes as long."""
    if len(password) > MAX_PASSWORD_LENGTH:
        return False
    return await to_thread(_verify, stored_hash or _dummy_hash(), password, stored_hash)


def _verify(stored_hash: str, password: str, real: str | None) -> bool:
    try:
        _hasher.verify(stored_hash, password)
    except (VerificationError, InvalidHashError):
        return False
    return real is not None


@functools.cache
def _dummy_hash() -> str:
    return _hasher.hash("no account has this password")
