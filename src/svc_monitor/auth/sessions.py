"""The session cookie: a signed, short-lived cache of who the session belongs to.

The session itself is a row in `auth_sessions`. The cookie carries its id plus the user's
id, name and role and when those were last read from storage; for RECHECK_AFTER_S the
service trusts them without a query, then reads the row again and re-issues the cookie.
So a role change reaches other replicas within ~30 s, while logout and member removal
take effect at once in this process (the service keeps the ended session ids).

Signed with itsdangerous (HMAC-SHA1 over a key derived from AUTH_SECRET and this salt),
not encrypted: nothing in it is secret, and any edit breaks the signature.
"""

import secrets
from dataclasses import dataclass
from typing import Any

from itsdangerous import BadSignature, URLSafeTimedSerializer

from svc_monitor.auth.models import Role

RECHECK_AFTER_S = 30
SESSION_LIFETIME_S = 7 * 24 * 3600  # absolute: a session ends a week after sign-in
MAX_COOKIE_CHARS = 1024  # ours are ~200; a longer value is not ours and is not parsed
COOKIE_NAME = "svc_session"
SECURE_COOKIE_NAME = "__Host-svc_session"  # browsers accept it only Secure, Path=/, no Domain
COOKIE_SALT = "svc-monitor session cookie"


@dataclass(frozen=True, slots=True)
class CookieSession:
    session_id: str
    user_id: str
    name: str
    role: Role
    checked_at: int  # epoch s: when user and role were last read from storage
    started_at: int  # epoch s: sign-in


class SessionCookies:
    def __init__(self, secret: str, *, secure: bool) -> None:
        self._serializer = URLSafeTimedSerializer(secret, salt=COOKIE_SALT)
        self.secure = secure
        self.name = SECURE_COOKIE_NAME if secure else COOKIE_NAME

    def encode(self, session: CookieSession) -> str:
        payload = {
            "s": session.session_id,
            "u": session.user_id,
            "n": session.name,
            "r": session.role.value,
            "c": session.checked_at,
            "t": session.started_at,
        }
        return str(self._serializer.dumps(payload))

    def decode(self, value: str | None, *, now: float) -> CookieSession | None:
        """The session in a cookie we signed, or None for anything else."""
        if not value or len(value) > MAX_COOKIE_CHARS:
            return None
        try:
            payload: Any = self._serializer.loads(value)
        except (BadSignature, ValueError, UnicodeDecodeError):
            return None
        try:
            session = CookieSession(
                session_id=str(payload["s"]),
                user_id=str(payload["u"]),
                name=str(payload["n"]),
                role=Role(payload["r"]),
                checked_at=int(payload["c"]),
                started_at=int(payload["t"]),
            )
        except (KeyError, TypeError, ValueError):
            return None
        if now - session.started_at >= SESSION_LIFETIME_S:
            return None
        return session

    def set_cookie_header(self, value: str) -> str:
        attributes = [f"{self.name}={value}", "Path=/", "HttpOnly", "SameSite=Lax"]
        attributes.append(f"Max-Age={SESSION_LIFETIME_S}")
        if self.secure:
            attributes.append("Secure")
        return "; ".join(attributes)

    def clear_cookie_header(self) -> str:
        attributes = [f"{self.name}=", "Path=/", "HttpOnly", "SameSite=Lax", "Max-Age=0"]
        if self.secure:
            attributes.append("Secure")
        return "; ".join(attributes)


def new_secret() -> str:
    return secrets.token_urlsafe(48)


def new_id() -> str:
    return secrets.token_urlsafe(24)
